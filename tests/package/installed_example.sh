#!/bin/sh
# tests/package/installed_example.sh — the C++ package end to end: `cmake --install` into a prefix
# inside the build folder, examples/installed configured and built against it with find_package,
# and the same scenario answered three ways — the kvplan CLI, the installed-package example and
# (when it was built) the Python module — giving byte-identical JSON, for the memory answer and
# one simulated run.
#
#   installed_example.sh BUILD_DIR SOURCE_DIR KVPLAN_CLI GENERATOR CXX_COMPILER [PYTHON PYTHON_MODULE_DIR]
set -eu
build=$1 src=$2 cli=$3 generator=$4 cxx=$5 python=${6:-} pydir=${7:-}
work=$build/package-test
scenario=data/scenarios/chat-h100.json
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$src/examples/installed" -B "$work/example" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/example" >"$work/build.log"
cd "$src"
for answer in memory simulate; do
  "$cli" "$answer" --json --scenario "$scenario" >"$work/$answer.cli" 2>/dev/null
  "$work/example/kvplan_answer" "$answer" "$scenario" >"$work/$answer.cpp"
  cmp "$work/$answer.cli" "$work/$answer.cpp"
  if [ -n "$python" ]; then
    PYTHONPATH="$pydir" "$python" -c "import sys, kvplan; print(getattr(kvplan.load_scenario(sys.argv[2]), sys.argv[1] + '_json')())" \
      "$answer" "$scenario" >"$work/$answer.py"
    cmp "$work/$answer.cli" "$work/$answer.py"
  fi
  echo "$answer: CLI, installed C++ package${python:+ and Python} give the same $(wc -c <"$work/$answer.cli") bytes"
done
