#!/usr/bin/env bash
# Sanitizer build and fuzzing (issue 16; docs/fuzzing.md). One clang build in build-sanitize with
# AddressSanitizer + UndefinedBehaviorSanitizer holds both the CPU tests and the libFuzzer targets.
#
#   bash scripts/fuzz.sh build            # configure and build build-sanitize
#   bash scripts/fuzz.sh tests            # the CPU tests under ASan + UBSan
#   bash scripts/fuzz.sh smoke [SECONDS]  # every target: its regression inputs, then SECONDS of fuzzing
#                                         # from its seed corpus (default 20) with a fixed random
#                                         # seed, so a CI failure replays; CI runs this
#   bash scripts/fuzz.sh long  [SECONDS] [TARGET=SECONDS ...]
#                                         # every target for SECONDS (default 3600), corpora kept in
#                                         # build-sanitize/fuzz-corpus; prints the inputs run per target
#                                         # and the total; TARGET=SECONDS gives one target its own time
#                                         # (e.g. fuzz_scenario=3000), TARGET=0 skips it
# A crash, an escaped exception, a hang (> 10 s per input) or a blow-up (> 2 GiB) fails the run and
# leaves the input in build-sanitize/fuzz-artifacts/; copy it into tests/fuzz/regressions/<target>/
# once fixed, so every later run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=build-sanitize
targets=(fuzz_model_config fuzz_gpu_file fuzz_trace fuzz_scenario fuzz_engine_log fuzz_calibration_db fuzz_cli_args)
dict_of() {
  case "$1" in
    fuzz_model_config) echo model_config ;;
    fuzz_gpu_file) echo gpu_file ;;
    fuzz_trace) echo trace ;;
    fuzz_scenario) echo scenario ;;
    fuzz_engine_log) echo engine_log ;;
    fuzz_cli_args) echo cli_args ;;
    *) echo "" ;;
  esac
}

build() {  # configures once, then builds incrementally
  bash scripts/setup.sh
  # -O1 with line tables only: what AddressSanitizer recommends, and about half the compile time
  # of -O2 -g.
  [ -f "$dir/build.ninja" ] || CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DCMAKE_C_FLAGS="-O1 -gline-tables-only" \
    -DKVPLAN_ENABLE_CUDA=OFF -DKVPLAN_ENABLE_CUPTI=OFF -DKVPLAN_BUILD_GUI=OFF -DKVPLAN_BUILD_BENCH=OFF \
    -DKVPLAN_BUILD_FUZZERS=ON -DKVPLAN_SANITIZE=address,undefined -DKVPLAN_WARNINGS_AS_ERRORS=OFF >/dev/null
  cmake --build "$dir" -j "${KVPLAN_JOBS:-2}"
}

run_target() {  # target seconds corpus_dir [seed]
  local t=$1 seconds=$2 corpus=$3 seed=${4:-0} dict d
  d=$(dict_of "$t")
  dict=()
  [ -n "$d" ] && dict=(-dict="$root/tests/fuzz/dict/$d.dict")
  mkdir -p "$corpus" "$dir/fuzz-artifacts"
  # regression inputs first: each must pass
  local reg="$root/tests/fuzz/regressions/$t"
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg" 2>/dev/null)" ]; then
    "$dir/tests/fuzz/$t" -timeout=10 -rss_limit_mb=2048 "$reg"/* >/dev/null 2>"$dir/fuzz-artifacts/$t.regressions.log" ||
      { echo "fuzz: $t fails on a regression input:"; tail -20 "$dir/fuzz-artifacts/$t.regressions.log"; return 1; }
  fi
  local log="$dir/fuzz-artifacts/$t.log"
  if ! "$dir/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
       "${dict[@]}" -artifact_prefix="$dir/fuzz-artifacts/$t-" -print_final_stats=1 -seed="$seed" \
       "$corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz: $t found a defect (input kept in $dir/fuzz-artifacts/):"
    grep -E "ERROR|SUMMARY|runtime error|uncaught" "$log" | head -20
    return 1
  fi
  local runs
  runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  echo "fuzz: $t ran $runs inputs in ${seconds} s, no defect"
}

case "${1:-smoke}" in
  build) build ;;
  tests)
    build
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir "$dir" -L cpu --output-on-failure -j "${KVPLAN_JOBS:-2}" ;;
  smoke | long)
    mode=$1
    seconds=${2:-$([ "$mode" = long ] && echo 3600 || echo 20)}
    declare -A own=()
    for arg in "${@:3}"; do
      name=${arg%%=*} value=${arg#*=}
      if [[ "$arg" != *=* || ! " ${targets[*]} " =~ " $name " || ! "$value" =~ ^[0-9]+$ ]]; then
        echo "fuzz: '$arg' is not TARGET=SECONDS with TARGET one of: ${targets[*]}" >&2; exit 2
      fi
      own[$name]=$value
    done
    build
    status=0 total=0
    for t in "${targets[@]}"; do
      s=${own[$t]:-$seconds}
      [ "$s" = 0 ] && continue
      if [ "$mode" = smoke ]; then corpus=$(mktemp -d); else corpus="$dir/fuzz-corpus/$t"; fi
      # smoke: fixed seed (the same mutations on every machine; only how far they get differs);
      # long: seed 0, a fresh random seed each run
      run_target "$t" "$s" "$corpus" "$([ "$mode" = smoke ] && echo 1 || echo 0)" || status=1
      [ "$mode" = smoke ] && rm -rf "$corpus"
      n=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$dir/fuzz-artifacts/$t.log" | grep -oE "[0-9]+$" || echo 0)
      total=$((total + n))
    done
    echo "fuzz: $total inputs in total"
    exit $status ;;
  *) echo "usage: scripts/fuzz.sh build|tests|smoke [SECONDS]|long [SECONDS]" >&2; exit 2 ;;
esac
