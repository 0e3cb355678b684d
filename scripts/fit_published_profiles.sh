#!/usr/bin/env bash
# Regenerates data/profiles/<gpu>.json, the PerfProfiles fitted from the PUBLISHED operator tables in
# data/measurements (NVIDIA aiconfigurator tables measured inside vLLM, Vidur's profiles, the Azure
# AI benchmarking guide's MI300X microbenchmarks), for every GPU that has some. Per GPU: `kvplan calibrate import-published` reads its tables into a fresh
# database (one 'published' run per table), `kvplan calibrate fit --run all` fits every class with
# rows (curves, shape grids, floor; 70% of shapes fitted, 30% held out) and writes the profile.
# Deterministic: the same tables and the same kvplan give byte-identical profiles.
#
#   scripts/fit_published_profiles.sh [BUILD_DIR]      # default: build (needs build/cli/kvplan)
#
# It then measures and writes the whole-model bands into the new h100-sxm.json and h200.json
# (aiconfigurator's H100 and H200 e2e sets) and mi300x.json (the public MI300X runs), rebuilds, and
# fails when the shipped serving terms are no longer what the H100 fit gives (data/profiles/*.json are embedded
# in the binary: published_profile()).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
kvplan="$build/cli/kvplan"
if [ ! -x "$kvplan" ]; then
  echo "fit_published_profiles: $kvplan not found; build first (scripts/build.sh or cmake --build build)" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for gpu in h100-sxm h200 b200 a100-80gb l40s mi300x; do
  db="$work/$gpu.sqlite"
  "$kvplan" calibrate import-published "$root/data/measurements" --gpu "$gpu" --out "$db"
  "$kvplan" calibrate fit "$db" --run all --gpu "$gpu" --out "$root/data/profiles/$gpu.json"
done

# The fit writes each profile whole, without the whole-model validation band that every answer on
# that GPU carries. The band is measured against the new profile here, in the same command, so a
# refit never drops it silently: rebuild (the profiles are embedded), measure and write the H100 and
# H200 bands (the GPUs with a whole-model set), rebuild again, and refuse to finish without them.
cmake --build "$build" -j "${KVPLAN_JOBS:-2}" --target kvplan kvplan_validate_serving >/dev/null
"$build/bench/kvplan_validate_serving" --shipped-only --write-band > "$work/band.txt"
# MI300X: no e2e set of its own; its band comes from the public runs on it (25 vLLM/SGLang runs of
# two sources, data/serving_measurements/public_runs.csv), measured against the new profile.
"$build/bench/kvplan_validate_serving" --public mi300x --write-band > "$work/band_mi300x.txt"
cmake --build "$build" -j "${KVPLAN_JOBS:-2}" --target kvplan >/dev/null
for banded in h100-sxm h200 mi300x; do
  if ! grep -q '"ttft_p90_rel_error"' "$root/data/profiles/$banded.json"; then
    echo "fit_published_profiles: data/profiles/$banded.json has no validation band after --write-band" >&2
    exit 1
  fi
done
grep -E "^wrote the band" "$work/band.txt" "$work/band_mi300x.txt" || true
echo "wrote $root/data/profiles/{h100-sxm,h200,b200,a100-80gb,l40s,mi300x}.json with the H100, H200 and MI300X bands and rebuilt kvplan."
# The bands measure the shipped serving terms; they are fitted on the H100 set
# (sim/src/serving_overheads.cpp). New step costs can make them stale: check every engine's.
if ! "$build/bench/kvplan_validate_serving" --gpu h100 --check-shipped > "$work/check.txt"; then
  grep -E "DIFFERS" "$work/check.txt" || true
  echo "fit_published_profiles: the serving terms are stale for the new profiles: run" >&2
  echo "build/bench/kvplan_validate_serving --gpu h100 --fit-overheads, paste its lines into" >&2
  echo "sim/src/serving_overheads.cpp, rebuild, and run this script again (the bands above were measured with the stale terms)." >&2
  exit 1
fi
echo "the shipped serving terms are what the H100 fit gives for these profiles."
