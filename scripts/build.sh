#!/usr/bin/env bash
# Configures and builds kvplan into build/ (Release). Extra arguments go to cmake's configure step.
#
#   bash scripts/build.sh [CMAKE_ARGS...]         # every target (tests, benchmarks, GUI, Python, CUDA
#                                                 # when their toolchains are found)
#   bash scripts/build.sh --cli [CMAKE_ARGS...]   # only the `kvplan` command and what it links
#
# Both use the same build/ folder. --cli switches the optional parts off; a later full build
# forgets those switches (cmake -U) so that each part is on again where its toolchain is found.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KVPLAN_JOBS:-2}
if [ "${1:-}" = "--cli" ]; then
  shift
  bash scripts/setup.sh cli
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKVPLAN_BUILD_TESTS=OFF -DKVPLAN_BUILD_BENCH=OFF -DKVPLAN_BUILD_GUI=OFF -DKVPLAN_BUILD_PYTHON=OFF \
    -DKVPLAN_BUILD_MPI=OFF -DKVPLAN_ENABLE_CUDA=OFF -DKVPLAN_ENABLE_CUPTI=OFF "$@" >/dev/null
  cmake --build build -j "$jobs" --target kvplan
  exit 0
fi
bash scripts/setup.sh all
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -U KVPLAN_BUILD_GUI -U KVPLAN_BUILD_PYTHON -U KVPLAN_BUILD_MPI -U KVPLAN_ENABLE_CUDA -U KVPLAN_ENABLE_CUPTI \
  -DKVPLAN_BUILD_TESTS=ON -DKVPLAN_BUILD_BENCH=ON "$@" >/dev/null
cmake --build build -j "$jobs"
