#!/usr/bin/env bash
# The README's first command: install what the `kvplan` command needs (scripts/setup.sh cli), build
# only that target, run the default scenario. The tests, benchmarks, planner (kvplan-gui), PDF
# report writer, Python module and CUDA kernels are built by scripts/test.sh, or by
# `bash scripts/build.sh` alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --cli
./build/cli/kvplan "$@"
