#!/usr/bin/env bash
# Run here (the CPU machine), once: fetches what the GPU machine may lack into
# .gpu-deps/ (git-ignored), which the device call carries.
#  * .gpu-deps/usr: always used there: RapidCheck (its CMake config is
#    relocatable) and the header-only CLI11.
#  * .gpu-deps/fallback/usr: GoogleTest, Google Benchmark, fmt and
#    nlohmann-json, used there only when the machine's image has no copy
#    (scripts/gpu_run.sh checks), so a new image does not cost a lost call.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu-deps
packages=(librapidcheck-dev libcli11-dev)
fallback=(libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libfmt-dev libfmt9 nlohmann-json3-dev)
stamp="$dest/.packages"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]} | ${fallback[*]}" ]; then
  echo "prepare_gpu_deps: $dest is up to date"; exit 0
fi
rm -rf "$dest"
mkdir -p "$dest/fallback" /tmp/musespark-debs
(cd /tmp/musespark-debs && apt-get download -q "${packages[@]}" "${fallback[@]}" 2>/dev/null)
for p in "${packages[@]}"; do dpkg -x /tmp/musespark-debs/${p}_*.deb "$dest"; done
for p in "${fallback[@]}"; do dpkg -x /tmp/musespark-debs/${p}_*.deb "$dest/fallback"; done
echo "${packages[*]} | ${fallback[*]}" > "$stamp"
echo "prepare_gpu_deps: ${packages[*]} under $dest/usr; fallbacks (${fallback[*]}) under $dest/fallback/usr"
