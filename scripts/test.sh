#!/usr/bin/env bash
# The README's test command: install what is missing, build with warnings as errors, run every test.
# GPU tests skip at run time when no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh -DKVPLAN_WARNINGS_AS_ERRORS=ON
ctest --test-dir build --output-on-failure -j "${KVPLAN_JOBS:-2}"
