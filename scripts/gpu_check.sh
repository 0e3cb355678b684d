#!/usr/bin/env bash
# GPU check: builds the GPU-side targets, runs the gpu tests, runs the kernel benchmark (every case
# checked against its CPU reference, then timed) and PyTorch's scaled_dot_product_attention on the
# same shapes, and prints a short table last. Meant for the lent device machine (CUDA 13, CMake,
# PyTorch; no GoogleTest, fmt or Boost there), and for any machine with a GPU. Under 8 minutes on
# an H200.
#
#   bash scripts/gpu_check.sh --prepare   # here, without a GPU: build the gtest-based gpu tests into
#                                         # gpu-carry/ (static), to be carried to the device
#   bash scripts/gpu_check.sh             # on the GPU machine; results under $OUT (or /tmp/kvplan_gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "${1:-}" = "--prepare" ]; then
  bash scripts/setup.sh
  cmake -S . -B build-gpu-prep -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVPLAN_KERNELS_ONLY=ON \
    -DKVPLAN_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
  cmake --build build-gpu-prep -j "${KVPLAN_JOBS:-2}" --target kvplan_kernels_gpu_tests
  mkdir -p gpu-carry
  cp build-gpu-prep/tests/kernels/kvplan_kernels_gpu_tests gpu-carry/
  echo "gpu_check: gpu-carry/kvplan_kernels_gpu_tests ready; carry gpu-carry to the device"
  exit 0
fi

out=${OUT:-/tmp/kvplan_gpu}
mkdir -p "$out"
start=$(date +%s)
log() { echo "[gpu_check $(( $(date +%s) - start ))s] $*"; }

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$out/gpu.csv" 2>&1 || true
cat "$out/gpu.csv"

# 1. Build the kernels and the benchmark (host libraries are not needed in KERNELS_ONLY mode).
log "configure + build (kernels only, sm_90)"
jobs=$(nproc 2>/dev/null || echo 8)
if ! cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVPLAN_KERNELS_ONLY=ON \
     -DKVPLAN_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/configure.log" 2>&1; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DKVPLAN_KERNELS_ONLY=ON \
    -DKVPLAN_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/configure.log" 2>&1 || {
    log "configure failed"; tail -20 "$out/configure.log"; exit 1; }
fi
cmake --build build-gpu -j "$jobs" > "$out/build.log" 2>&1 || { log "build failed"; tail -40 "$out/build.log"; exit 1; }

# 2. GPU tests: built here if GoogleTest exists, else the carried static binary.
tests=""
if [ -x build-gpu/tests/kernels/kvplan_kernels_gpu_tests ]; then tests=build-gpu/tests/kernels/kvplan_kernels_gpu_tests;
elif [ -x gpu-carry/kvplan_kernels_gpu_tests ]; then tests=gpu-carry/kvplan_kernels_gpu_tests; fi
test_summary="gpu tests: not available (no GoogleTest here and no gpu-carry/; run --prepare elsewhere)"
if [ -n "$tests" ]; then
  log "gpu tests ($tests)"
  timeout 240 "$tests" > "$out/gpu_tests.log" 2>&1
  rc=$?
  ran=$(grep -E "^\[==========\] [0-9]+ tests? from" "$out/gpu_tests.log" | tail -1 | sed 's/\[==========\] //')
  summary_lines=$(grep -E "^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?" "$out/gpu_tests.log" | tr '\n' ' ')
  test_summary="gpu tests: exit $rc; $ran; $summary_lines"
  grep -E "Failure|FAILED" "$out/gpu_tests.log" | head -20
fi

# 3. Kernel benchmark (each case checked against its CPU reference first).
log "kernel benchmark"
timeout 240 build-gpu/bench/kvplan_bench_kernels --csv "$out/kernels.csv" > "$out/kernels.txt" 2>&1
bench_rc=$?

# 4. PyTorch side by side.
log "PyTorch SDPA"
PYTHONUNBUFFERED=1 timeout 120 python3 bench/torch_sdpa_bench.py --csv "$out/torch.csv" > "$out/torch.txt" 2>&1 || true

log "done"
echo
echo "==== $test_summary"
echo "==== kvplan kernels (exit $bench_rc)"
cat "$out/kernels.txt"
echo "==== PyTorch scaled_dot_product_attention"
cat "$out/torch.txt"
