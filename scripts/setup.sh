#!/usr/bin/env bash
# Installs the Debian packages kvplan needs, with apt-get. Idempotent: when everything is present it
# only runs dpkg-query and returns in well under a second.
#
#   bash scripts/setup.sh          # everything: build and test every target (scripts/test.sh)
#   bash scripts/setup.sh cli      # only what the `kvplan` command needs (scripts/run_default.sh)
set -euo pipefail

mode=${1:-all}

# What `cmake --build build --target kvplan` needs: the compiler and build tools, and the libraries
# core/, sim/, calibration/, plan/ and cli/ link (no Qt, no CUDA, no test frameworks).
cli_packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libfmt-dev libcli11-dev
  libsqlite3-dev libboost-graph-dev libeigen3-dev
)
# The rest: tests, benchmarks, the planner, the Python module, MPI, the sanitizer and fuzz builds.
rest_packages=(
  git sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  # Qt 6 for the planner and the PDF report (KVPLAN_BUILD_GUI). Qt6Charts' CMake config needs
  # Qt6OpenGL, whose CMake files are in libqt6opengl6-dev (not pulled in by qt6-base-dev).
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev xvfb xauth
  # pdftotext and pdftoppm: the report tests read page 1 of the PDF back (tests/gui).
  poppler-utils
  # The sanitizer build and the libFuzzer targets (scripts/fuzz.sh): clang with its runtimes.
  clang libclang-rt-14-dev
  # The Python module (python/, KVPLAN_BUILD_PYTHON), its tests and examples/sweep_kv_dtypes.py.
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-matplotlib
  # `mpirun -np N kvplan plan` (kvplan-mpi, KVPLAN_BUILD_MPI) and its test with mpirun -np 2.
  libopenmpi-dev openmpi-bin
)

case "$mode" in
  cli) packages=("${cli_packages[@]}") ;;
  all) packages=("${cli_packages[@]}" "${rest_packages[@]}") ;;
  *) echo "setup.sh: unknown mode '$mode' (cli or all)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
