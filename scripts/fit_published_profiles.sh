#!/usr/bin/env bash
# Regenerates data/profiles/<gpu>.json, the PerfProfiles fitted from the PUBLISHED operator tables in
# data/measurements (NVIDIA aiconfigurator tables measured inside vLLM, Vidur's profiles), for every
# GPU that has some. Per GPU: `kvplan calibrate import-published` reads its tables into a fresh
# database (one 'published' run per table), `kvplan calibrate fit --run all` fits every class with
# rows (curves, shape grids, floor; 70% of shapes fitted, 30% held out) and writes the profile.
# Deterministic: the same tables and the same kvplan give byte-identical profiles.
#
#   scripts/fit_published_profiles.sh [BUILD_DIR]      # default: build (needs build/cli/kvplan)
#
# Afterwards rebuild: data/profiles/*.json are embedded in the binary (published_profile()).
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

for gpu in h100-sxm h200 b200 a100-80gb l40s; do
  db="$work/$gpu.sqlite"
  "$kvplan" calibrate import-published "$root/data/measurements" --gpu "$gpu" --out "$db"
  "$kvplan" calibrate fit "$db" --run all --gpu "$gpu" --out "$root/data/profiles/$gpu.json"
done
echo "wrote $root/data/profiles/{h100-sxm,h200,b200,a100-80gb,l40s}.json; rebuild to embed them, then rerun"
echo "build/bench/kvplan_validate_serving --write-band (the H100 whole-model band, measured with the new profile) and rebuild"
