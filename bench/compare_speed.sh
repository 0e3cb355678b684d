#!/bin/bash
# Times issue 27's three command-line speed figures with two kvplan binaries, interleaved (before,
# after, before, after, ...) so both see the same machine load, and prints one line per run:
#   <what> <before|after> <user s> <wall s> <1-min load average>
# On a shared machine only the before/after ratio of interleaved runs means anything; say the load
# when you quote a figure (docs/benchmarks.md, "Speed figures of issue 27").
#
#   bench/compare_speed.sh BEFORE_BINARY AFTER_BINARY [RUNS]     # from the repository root
set -euo pipefail
before=$1
after=$2
runs=${3:-5}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
time_one() { /usr/bin/time -f "%U %e" "$@" > /dev/null 2> "$log"; tail -1 "$log"; }
for what in azure plan default; do
  for ((i = 0; i < runs; i++)); do
    for side in before after; do
      bin=$before
      [ "$side" = after ] && bin=$after
      case $what in
        azure) t=$(time_one "$bin" simulate --trace data/traces/azure_llm_2023_conv.csv) ;;
        plan) t=$(time_one "$bin" plan --model llama-3.1-70b --workload chat --target-users 2000 --slo-ttft-ms 2000 --slo-tpot-ms 50) ;;
        default) t=$(time_one "$bin") ;;
      esac
      echo "$what $side $t $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
