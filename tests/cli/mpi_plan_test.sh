#!/usr/bin/env bash
# `mpirun -np 2 kvplan plan ... --json` must print, byte for byte, what one process prints
# (issue 13; cli/mpi_session.h). Usage: mpi_plan_test.sh MPIEXEC KVPLAN
set -euo pipefail
mpiexec=$1 kvplan=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/kvplan_mpi_XXXXXX")
trap 'rm -rf "$dir"' EXIT
args=(plan --model llama-3.1-8b --max-model-len 4096 --users 8 --think-time 2 --prompt-lengths fixed:512
      --output-lengths fixed:64 --duration 20 --seed 3 --slo-ttft-ms 400 --slo-tpot-ms 40 --target-users 500
      --gpus l4,a10g,h100-sxm,a100-80gb,l40s --max-gpus 2 --exact-front --json)
"$kvplan" "${args[@]}" >"$dir/one.json" 2>"$dir/one.err" || { echo "kvplan failed:"; tail -30 "$dir/one.err"; exit 1; }
# Root in a container: Open MPI refuses root unless told; --oversubscribe lets 2 ranks share 1 core.
# In the sanitizer build, LeakSanitizer reports Open MPI's own allocations (libmpi and its dlopened
# components never free them); kvplan's leaks are checked by every other test, so not here.
if ! OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
     ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     "$mpiexec" -np 2 "$kvplan" "${args[@]}" >"$dir/two.json" 2>"$dir/two.err"; then
  echo "mpirun -np 2 failed:"; tail -30 "$dir/two.err"; exit 1
fi
grep -q "on 2 MPI ranks" "$dir/two.err" || { echo "mpirun did not run kvplan on 2 ranks:"; cat "$dir/two.err"; exit 1; }
cmp "$dir/one.json" "$dir/two.json" || { echo "mpirun -np 2 printed a different plan"; diff "$dir/one.json" "$dir/two.json" | head; exit 1; }
grep -q '"cheapest": [0-9]' "$dir/one.json" || { echo "no cheapest deployment in the plan"; exit 1; }
echo "mpirun -np 2: identical plan ($(wc -c <"$dir/one.json") bytes)"
