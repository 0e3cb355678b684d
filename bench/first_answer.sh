#!/usr/bin/env bash
# Time from a fresh clone on a fresh Debian 12 machine to the default answer (README's first
# command), package installation included. The "fresh machine" is a debootstrap'ed Debian 12
# minbase tree with git and ca-certificates only (no compiler, no CMake): the strictest start.
# Needs root and Debian's mirror; writes the tree under $ROOT (default /tmp/kvplan-fresh) and
# leaves it there for inspection (remove it with `umount $ROOT/proc $ROOT/dev; rm -rf $ROOT`).
#
#   sudo bash bench/first_answer.sh [REPO]     # REPO: the repository to clone (default: this one)
#
# Prints the wall time of `git clone` + `bash scripts/run_default.sh` inside the tree, and the
# part spent in apt-get (setup) and in the build. Figures: docs/benchmarks.md, "First answer".
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
root=${ROOT:-/tmp/kvplan-fresh}
mirror=${MIRROR:-http://deb.debian.org/debian}
if [ ! -x "$root/usr/bin/git" ]; then
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends git ca-certificates >/dev/null"
fi
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null || true' EXIT
rm -rf "$root/src" && mkdir -p "$root/src"
git clone -q --no-local "$repo" "$root/src/kvplan"
chroot "$root" bash -c '
  cd /src/kvplan
  start=$(date +%s.%N)
  bash scripts/setup.sh cli
  setup_done=$(date +%s.%N)
  bash scripts/run_default.sh > /tmp/answer.txt 2> /tmp/answer.err
  end=$(date +%s.%N)
  grep -m1 "concurrent users meet it" /tmp/answer.txt || { cat /tmp/answer.err; exit 1; }
  awk -v a="$start" -v b="$setup_done" -v c="$end" "BEGIN { printf \"first answer: %.0f s (packages %.0f s, build and run %.0f s)\n\", c - a, b - a, c - b }"
'
