#!/usr/bin/env bash
# Screenshots of the planner's main views, for docs/screenshots/ and the README.
#
#   scripts/screenshots.sh [BUILD_DIR]        # default build-gui, then build
#
# Starts Xvfb on :99 (a real X server, so the xcb platform and its fonts are used, unlike the
# offscreen platform of the tests), opens data/scenarios/chat-h100.json (defaults if it is missing),
# runs its simulation with a load sweep, grabs every view with QWidget::grab() and exits.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-}"
if [[ -z "$build" ]]; then
  for d in build-gui build; do
    if [[ -x "$d/gui/kvplan-gui" ]]; then build="$d"; break; fi
  done
fi
gui="${build:-build}/gui/kvplan-gui"
if [[ ! -x "$gui" ]]; then
  echo "screenshots.sh: $gui not found; build with KVPLAN_BUILD_GUI=ON first" >&2
  exit 2
fi
out=docs/screenshots
mkdir -p "$out"

display=:99
Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
trap 'kill "$xvfb_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  [[ -e /tmp/.X11-unix/X99 ]] && break
  sleep 0.1
done

args=(--screenshot "$out")
if [[ -f data/scenarios/chat-h100.json ]]; then args+=(--scenario data/scenarios/chat-h100.json); fi
DISPLAY="$display" QT_QPA_PLATFORM=xcb "$gui" "${args[@]}"
ls -l "$out"
