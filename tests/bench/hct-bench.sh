#!/usr/bin/env bash
# FedWalk HCT build benchmark, side by side in one run on one dataset:
#   1. nodefl-dtw-bench: the straightforward DTW (full double matrix per
#      pair) against the fast exact DTW on the same random vertex pairs of
#      paper-mode ordered degree matrices: ns per cell and the speed-up;
#   2. nodefl-hct-bench --mode strict and --mode paper: the whole server
#      pipeline (all-pairs dissimilarity, NN-chain clustering, Eq. 12
#      codebook) on device uploads simulated with the SDK's device code,
#      each mode in its own process so its peak memory is its own; plus the
#      neighbour-recovery attack on each mode's uploads.
#
# Usage: tests/bench/hct-bench.sh [--graph DIR] [--pairs N] [--threads T] [--no-build]
#   --graph     dataset (default ../shared/datasets/blogcatalog)
#   --pairs     pairs for the DTW comparison (default 2000)
#   --threads   compute threads (default: all cores)
#   --no-build  use the binaries already in build/host
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/blogcatalog
pairs=2000
threads=$(nproc)
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "hct-bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "hct-bench.sh: no edges.tsv in '$graph'" >&2; exit 2; }
if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-hct-bench nodefl-dtw-bench >/dev/null
fi
bin=build/host/bin

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "dataset: $graph, $threads compute threads"
echo
echo "== DTW: straightforward vs fast (same $pairs random pairs)"
$bin/nodefl-dtw-bench --graph "$graph" --pairs "$pairs" --threads "$threads"
for mode in strict paper; do
  echo
  echo "== HCT build, $mode mode"
  $bin/nodefl-hct-bench --graph "$graph" --mode "$mode" --threads "$threads" 2>&1 | grep -v '^  '
done
