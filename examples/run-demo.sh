#!/usr/bin/env bash
# The project's main job on its bundled default (README: `bash examples/run-demo.sh`).
#
# Installs what is missing (toolchains/install-deps.sh host), builds the host
# tree in build/host, and runs nodefl-primitives-demo: every node of Zachary's
# karate club (../shared/datasets/karate) runs as its own SDK device and
# exercises the privacy primitives in strict and paper modes. Without the
# shared datasets it uses a generated planted-partition graph instead.
#
# Usage: examples/run-demo.sh [--no-install] [demo options...]
#   --no-install  skip the apt step
#   any other argument is passed to nodefl-primitives-demo (see its --help),
#   e.g. --epsilon 2 --dataset ../shared/datasets/cora
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${NODEFL_JOBS:-2}

install=1
demo_args=()
for arg in "$@"; do
  case $arg in
    --no-install) install=0 ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; demo_args+=("$arg") ;;
    *) demo_args+=("$arg") ;;
  esac
done

if [[ $install == 1 ]]; then
  bash toolchains/install-deps.sh host
fi

echo "== building (build/host)"
cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/host -j "$jobs" --target nodefl-primitives-demo

has_dataset=0
for arg in "${demo_args[@]}"; do
  case $arg in --dataset|--generate|-h|--help) has_dataset=1 ;; esac
done
if [[ $has_dataset == 0 ]]; then
  if [[ -f ../shared/datasets/karate/edges.tsv ]]; then
    demo_args=(--dataset ../shared/datasets/karate "${demo_args[@]}")
  else
    echo "== ../shared/datasets/karate not found: using a generated graph"
    demo_args=(--generate "${demo_args[@]}")
  fi
fi

echo "== running nodefl-primitives-demo ${demo_args[*]}"
exec build/host/bin/nodefl-primitives-demo "${demo_args[@]}"
