#!/usr/bin/env bash
# Calibration on a lent GPU: the quick CUPTI calibration into $OUT/h200.sqlite, then one-step
# validation (kvplan_validate_step), then a short table last. Under 9 minutes on an H200.
#
#   bash scripts/calibrate_device.sh --prepare     # here (no GPU needed): build both programs into
#                                                  # gpu-carry/calib/ (static libstdc++/libgcc and
#                                                  # SQLite, libfmt carried beside them)
#   run(command="bash scripts/calibrate_device.sh", carry=["gpu-carry"], timeout_s=570)
#
# Why carried binaries: the device image has CUDA 13, CMake and PyTorch but no SQLite headers,
# nlohmann-json, fmt or Boost, so the store and the simulator cannot be built there. cuBLAS and
# CUPTI come from the device's own CUDA (or its Python nvidia-* wheels), found below.
set -uo pipefail
cd "$(dirname "$0")/.."

carry=gpu-carry/calib
if [ "${1:-}" = "--prepare" ]; then
  cmake -S . -B build-calib-prep -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVPLAN_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DKVPLAN_BUILD_TESTS=OFF -DKVPLAN_BUILD_GUI=OFF \
    -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.a \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null || exit 1
  cmake --build build-calib-prep -j "${KVPLAN_JOBS:-2}" --target kvplan_calibrate_run kvplan_validate_step || exit 1
  mkdir -p "$carry"
  cp build-calib-prep/cli/kvplan-calibrate-run build-calib-prep/bench/kvplan_validate_step "$carry/"
  # Carry every non-system, non-CUDA shared library the programs need (libfmt here).
  for lib in $(ldd "$carry"/kvplan_* | awk '/=> \// {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*|ld-linux*|libstdc++*|libgcc_s*) ;;  # the system's own
      libcuda.so*|libcublas*|libcupti*|libcudart*|libnvidia*) ;;  # the device's CUDA
      *) cp -L "$lib" "$carry/" ;;
    esac
  done
  ls -la "$carry"
  ldd "$carry/kvplan-calibrate-run" | grep -v "linux-vdso"
  echo "calibrate_device: $carry ready (carry gpu-carry)"
  exit 0
fi

out=${OUT:-/tmp/kvplan_calib}
mkdir -p "$out"
start=$(date +%s)
log() { echo "[calibrate_device $(( $(date +%s) - start ))s] $*"; }
[ -x "$carry/kvplan-calibrate-run" ] || { echo "no $carry/: run 'bash scripts/calibrate_device.sh --prepare' here first"; exit 1; }

# cuBLAS / CUPTI of the device's CUDA 13: the toolkit folders, else PyTorch's nvidia-* wheels.
libdirs="$(pwd)/$carry"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && libdirs="$libdirs:$d"
done
for name in libcupti.so.13 libcublas.so.13 libcublasLt.so.13; do
  hit=""
  for d in ${libdirs//:/ }; do [ -e "$d/$name" ] && hit=1; done
  if [ -z "$hit" ] && ! ldconfig -p 2>/dev/null | grep -q "$name"; then
    found=$(find / -xdev -name "$name*" -not -path "/proc/*" 2>/dev/null | head -1)
    [ -n "$found" ] && libdirs="$libdirs:$(dirname "$found")"
  fi
done
export LD_LIBRARY_PATH="$libdirs:${LD_LIBRARY_PATH:-}"
ldd "$carry/kvplan-calibrate-run" > "$out/ldd.txt" 2>&1
grep "not found" "$out/ldd.txt" && log "missing libraries (see ldd above)"

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$out/gpu_before.csv" 2>&1 || true
cat "$out/gpu_before.csv"

log "quick calibration -> $out/h200.sqlite"
timeout 400 "$carry/kvplan-calibrate-run" --quick --out "$out/h200.sqlite" 2> "$out/calibrate.log"
cal_rc=$?
tail -n 25 "$out/calibrate.log"

log "one-step validation"
timeout 110 "$carry/kvplan_validate_step" --reps 10 > "$out/validate.txt" 2>&1
val_rc=$?

nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu_after.csv" 2>&1 || true
log "done"

echo
echo "==== calibration (exit $cal_rc; 124 = stopped by the time limit, stored shapes kept)"
python3 - "$out/h200.sqlite" <<'PY' 2>&1 | tee "$out/summary.txt"
import os, sqlite3, sys, statistics
if not os.path.exists(sys.argv[1]):
    print("no store written"); sys.exit(0)
try:
    db = sqlite3.connect(sys.argv[1])
    tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    t = next(x for x in tables if 'measure' in x)
    cols = [r[1] for r in db.execute(f"pragma table_info({t})")]
    rows = db.execute(f"select * from {t}").fetchall()
except Exception as e:
    print("cannot read the store:", e); sys.exit(0)
by = {}
for r in rows:
    d = dict(zip(cols, r)); by.setdefault(d.get('kernel'), []).append(d)
print(f"{'kernel':<20} {'rows':>5} {'best TB/s':>10} {'best TFLOP/s':>13} {'ratio med':>10} {'ratio min..max':>16}")
for k in sorted(by):
    ds = by[k]
    bw = [d['bytes'] / d['median_ns'] / 1e3 for d in ds if d.get('median_ns', 0) > 0 and d.get('bytes')]
    fl = [d['flops'] / d['median_ns'] / 1e3 for d in ds if d.get('median_ns', 0) > 0 and d.get('flops')]
    ra = [d['cupti_event_ratio'] for d in ds if d.get('cupti_event_ratio')]
    med = ds[0]['median_ns'] if k in ('launch_empty', 'cupti_overhead') else None
    print(f"{k:<20} {len(ds):>5} {max(bw) if bw else 0:>10.2f} {max(fl) if fl else 0:>13.1f} "
          f"{statistics.median(ra) if ra else 0:>10.3f} {(f'{min(ra):.2f}..{max(ra):.2f}') if ra else '-':>16}"
          + (f"   median {med:.0f} ns" if med is not None else ""))
PY
echo "==== kvplan_validate_step (exit $val_rc)"
cat "$out/validate.txt"
