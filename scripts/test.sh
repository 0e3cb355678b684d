#!/usr/bin/env bash
# The README's test command: install what is missing, build with warnings as errors, run every test;
# then the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer (clang, its own build
# folder, warnings as errors off there only), and every fuzz target on its regression inputs plus
# KVPLAN_FUZZ_SECONDS (default 20) of fuzzing from its seed corpus (scripts/fuzz.sh,
# docs/fuzzing.md). GPU tests skip at run time when no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh -DKVPLAN_WARNINGS_AS_ERRORS=ON
ctest --test-dir build --output-on-failure -j "${KVPLAN_JOBS:-2}"
bash scripts/fuzz.sh tests
bash scripts/fuzz.sh smoke "${KVPLAN_FUZZ_SECONDS:-20}"
