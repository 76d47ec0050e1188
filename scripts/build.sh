#!/usr/bin/env bash
# Shared by README's two commands: install what is missing, configure the cpu
# preset, build. Prints only what needs attention.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
cmake --preset cpu >/dev/null
cmake --build --preset cpu
