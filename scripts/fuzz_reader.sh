#!/usr/bin/env bash
# Builds the safetensors reader's libFuzzer target with ASan + UBSan (clang)
# and runs it for a while over the corpus in the repository.
#   scripts/fuzz_reader.sh BUILD_DIR [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?build directory}
seconds=${2:-20}
mkdir -p "$out/corpus"
cp -n property_tests/fuzz/corpus_safetensors/* "$out/corpus/" 2>/dev/null || true
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iimpl/include property_tests/fuzz/safetensors_reader_fuzzer.cpp impl/src/safetensors.cpp \
  -o "$out/safetensors_reader_fuzzer"
"$out/safetensors_reader_fuzzer" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$out/corpus" 2>&1 | tail -12
