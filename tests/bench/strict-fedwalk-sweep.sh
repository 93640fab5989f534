#!/usr/bin/env bash
# Strict FedWalk's Micro/Macro-F1 against the total epsilon per device, side
# by side with centralized DeepWalk at the same gamma and with the same
# SkipGram trainer (nodefl-deepwalk), in one run (docs/fedwalk.md,
# docs/benchmarks.md). The strict releases are made in process by the SDK's
# device code (nodefl-histogram-bench); the server side is what the job
# runs. Scores follow the DeepWalk protocol (server/tools/score_embeddings.py).
#
# Usage: tests/bench/strict-fedwalk-sweep.sh [options] [-- BENCH-ARGS]
#   --graphs "DIR ..."    datasets in the shared layout (default: cora and
#                         blogcatalog from ../shared/datasets)
#   --epsilons "E ..."    totals per device (default "1 2 4 8")
#   --gamma G             walks per vertex for both (default 80)
#   --seeds "S ..."       seeds; each (graph, epsilon) is run once per seed and
#                         the F1s averaged (default "1")
#   --shuffles N          DeepWalk-protocol shuffles (default 5)
#   --ratios R,...        training ratios (default 0.1,0.5,0.9; the gap column
#                         needs 0.5)
#   --build-dir DIR       where the binaries are built (default build/host)
#   --no-build            use the binaries already there
#   --out DIR             embeddings and scores (default build/bench/strict-fedwalk)
#   -- BENCH-ARGS         passed to nodefl-histogram-bench (e.g. --partition refined
#                         --clusters 256, or --rule direct)
# Prints one table per graph: epsilon, Micro-F1 and Macro-F1 at each
# training ratio, and the Micro-F1 gap to DeepWalk at 0.5.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/bench/bench_lib.sh

graphs="../shared/datasets/cora ../shared/datasets/blogcatalog"
epsilons="1 2 4 8"
gamma=80
seeds="1"
shuffles=5
ratios=0.1,0.5,0.9
build_dir=build/host
build=1
out=build/bench/strict-fedwalk
bench_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --graphs) graphs=$2; shift 2 ;;
    --epsilons) epsilons=$2; shift 2 ;;
    --gamma) gamma=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --shuffles) shuffles=$2; shift 2 ;;
    --ratios) ratios=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out=$2; shift 2 ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) sed -n '2,26s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "strict-fedwalk-sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $gamma =~ ^[1-9][0-9]*$ ]] || { echo "strict-fedwalk-sweep.sh: --gamma expects a positive integer" >&2; exit 2; }
for g in $graphs; do
  [[ -f $g/edges.tsv && -f $g/labels.tsv ]] || { echo "strict-fedwalk-sweep.sh: '$g' has no edges.tsv and labels.tsv" >&2; exit 2; }
done
python=$bench_python
if [[ $build == 1 ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build_dir" -j "${NODEFL_JOBS:-2}" --target nodefl-histogram-bench nodefl-deepwalk
fi
bench=$build_dir/bin/nodefl-histogram-bench
deepwalk=$build_dir/bin/nodefl-deepwalk
mkdir -p "$out"

[[ ,$ratios, == *,0.5,* ]] || { echo "strict-fedwalk-sweep.sh: --ratios must include 0.5" >&2; exit 2; }
score() { bench_score "$1" "$2" "$ratios" "$shuffles" "$3"; }
f1s() { bench_f1s "$@"; }

for g in $graphs; do
  name=$(basename "$g")
  echo "== $name: centralized DeepWalk (nodefl-deepwalk, gamma $gamma), seeds: $seeds" >&2
  dw_json=()
  for s in $seeds; do
    $deepwalk --graph "$g" --output "$out/$name-deepwalk-$s.w2v" --gamma "$gamma" --seed "$s" >"$out/$name-deepwalk-$s.txt"
    score "$out/$name-deepwalk-$s.w2v" "$g/labels.tsv" "$out/$name-deepwalk-$s.json"
    dw_json+=("$out/$name-deepwalk-$s.json")
  done
  IFS=$'\t' read -r dmi dma dmi5 < <(f1s "${dw_json[@]}")
  rows=()
  for e in $epsilons; do
    echo "== $name: strict FedWalk, total epsilon $e per device" >&2
    js=()
    for s in $seeds; do
      tag=$name-strict-e$e-$s
      $bench --graph "$g" --output "$out/$tag.w2v" --epsilon "$e" --gamma "$gamma" --seed "$s" "${bench_args[@]}" \
        >"$out/$tag.txt"
      score "$out/$tag.w2v" "$g/labels.tsv" "$out/$tag.json"
      js+=("$out/$tag.json")
    done
    IFS=$'\t' read -r mi ma mi5 < <(f1s "${js[@]}")
    clusters=$(grep -o 'clusters=[0-9]*' "$out/$name-strict-e$e-${seeds%% *}.txt" | head -1 | cut -d= -f2)
    edge=$(grep -o 'epsilon_per_edge_vs_server=[0-9.e+-]*' "$out/$name-strict-e$e-${seeds%% *}.txt" | cut -d= -f2)
    gap=$($python -c "print('%+.3f' % ($mi5 - $dmi5))")
    rows+=("$(printf '%-26s %8s %9.4g  %-24s  %-24s  %7s' "strict, epsilon $e" "$clusters" "$edge" "$mi" "$ma" \
      "$gap")")
  done
  echo
  echo "== $name (gamma $gamma, l 40, w 10, d 128; DeepWalk protocol, $shuffles shuffles; seeds $seeds)"
  printf '%-26s %8s %9s  %-24s  %-24s  %7s\n' "" clusters "per edge" "Micro-F1 at ${ratios//,/ \/ }" \
    "Macro-F1" "gap 0.5"
  printf '%-26s %8s %9s  %-24s  %-24s  %7s\n' "centralized DeepWalk" "-" "-" "$dmi" "$dma" "0"
  for r in "${rows[@]}"; do echo "$r"; done
done
echo
echo "(epsilon: each device's total over its releases, the ledger's figure; per edge: what the server holds"
echo " about one edge, both endpoints' releases; gap: strict minus DeepWalk Micro-F1 at training ratio 0.5)"
