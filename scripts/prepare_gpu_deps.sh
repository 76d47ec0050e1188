#!/usr/bin/env bash
# Run here (the CPU machine), once: fetches what the GPU machine lacks into
# .gpu-deps/ (git-ignored), which the device call carries. Today that is
# RapidCheck (its CMake config is relocatable) and the header-only CLI11.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu-deps
packages=(librapidcheck-dev libcli11-dev)
stamp="$dest/.packages"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
  echo "prepare_gpu_deps: $dest is up to date (${packages[*]})"; exit 0
fi
mkdir -p "$dest" /tmp/musespark-debs
(cd /tmp/musespark-debs && apt-get download -q "${packages[@]}" 2>/dev/null)
for p in "${packages[@]}"; do dpkg -x /tmp/musespark-debs/${p}_*.deb "$dest"; done
echo "${packages[*]}" > "$stamp"
echo "prepare_gpu_deps: ${packages[*]} unpacked under $dest/usr"
