#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/cli/kvplan "$@"
