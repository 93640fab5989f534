#!/usr/bin/env bash
# FedWalk's 2-hop jumps against centralized DeepWalk, side by side in one run
# (docs/benchmarks.md, "Where FedWalk's quality goes"):
#   - centralized DeepWalk: nodefl-deepwalk (γ walks per vertex, l = 40);
#   - paper-mode FedWalk's walks in one process (nodefl-fedwalk-walk-sim:
#     the SDK's device code hop by hop, noise and encoder included) with
#     each variant: "tree" (the paper's predictor, p = 0.2), "neighbours"
#     (a jump goes to one of the device's other neighbours, p = 0.2), "p0"
#     (no jumps: every step to a true neighbour);
#   - SkipGram with its default epochs everywhere (chosen from the walks),
#     then the DeepWalk protocol on every embedding.
# Prints one table per graph: Micro-F1 and Macro-F1 at the training ratios,
# the Micro-F1 gap to DeepWalk at 0.5, messages per walk, the share of
# jumps that land on a neighbour of the skipped vertex u (a true 2-hop
# step) and on a neighbour of the jumping device, and the epochs. F1s are
# means over the seeds, the rest from the first seed.
#
# Usage: tests/bench/fedwalk-predictor.sh [options]
#   --graphs "G ..."    dataset names in ../shared/datasets with labels.tsv,
#                       or folder paths in that layout (default "cora blogcatalog")
#   --gamma N           walks per vertex (default 80)
#   --seeds "S ..."     seeds, each variant run once per seed (default "1")
#   --variants "V ..."  any of tree, neighbours, p0 (default "tree neighbours p0")
#   --shuffles S        splits per training ratio (default 5)
#   --ratios R,...      training ratios, 0.5 among them (default 0.1,0.5,0.9)
#   --no-build          use build/host/bin as it is
#   --out DIR           embeddings, logs and scores (default build/bench/fedwalk-predictor)
#   -h, --help          this text
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/bench/bench_lib.sh

graphs="cora blogcatalog"
gamma=80
seeds="1"
variants="tree neighbours p0"
shuffles=5
ratios=0.1,0.5,0.9
build=1
out=build/bench/fedwalk-predictor
while [[ $# -gt 0 ]]; do
  case $1 in
    --graphs) graphs=$2; shift 2 ;;
    --gamma) gamma=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --shuffles) shuffles=$2; shift 2 ;;
    --ratios) ratios=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) bench_help; exit 0 ;;
    *) bench_fail "unknown argument '$1' (see --help)" ;;
  esac
done
bench_require_graphs labels.tsv $graphs
bench_require_whole $gamma $shuffles
for s in $seeds; do [[ $s =~ ^[0-9]+$ ]] || bench_fail "seed '$s' is not a whole number"; done
for v in $variants; do
  [[ $v == tree || $v == neighbours || $v == p0 ]] || bench_fail "unknown variant '$v' (tree, neighbours, p0)"
done
[[ ,$ratios, == *,0.5,* ]] || bench_fail "--ratios must include 0.5"
if ((build)); then
  bash toolchains/install-deps.sh host >/dev/null
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-deepwalk nodefl-fedwalk-walk-sim >/dev/null
fi
bin=build/host/bin
mkdir -p "$out"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

# field FILE KEY: the first KEY=value on FILE's lines.
field() { grep -o " $2=[^ ]*" "$1" | head -1 | cut -d= -f2; }
share() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else printf "-" }'; }

for g in $graphs; do
  dir=$(bench_graph_dir "$g")
  name=$(basename "$dir")
  rows=()
  declare -A f1_half=()
  for variant in deepwalk $variants; do
    echo "== $name: $variant, gamma $gamma, seeds $seeds" >&2
    jsons=()
    for s in $seeds; do
      tag=$name-$variant-g$gamma-s$s
      case $variant in
        deepwalk) $bin/nodefl-deepwalk --graph "$dir" --gamma "$gamma" --seed "$s" --output "$out/$tag.emb" \
                    >"$out/$tag.txt" 2>"$out/$tag.log" ;;
        tree|neighbours) $bin/nodefl-fedwalk-walk-sim --graph "$dir" --gamma "$gamma" --seed "$s" --predictor "$variant" \
                           --output "$out/$tag.emb" >"$out/$tag.txt" 2>"$out/$tag.log" ;;
        p0) $bin/nodefl-fedwalk-walk-sim --graph "$dir" --gamma "$gamma" --seed "$s" --p 0 \
              --output "$out/$tag.emb" >"$out/$tag.txt" 2>"$out/$tag.log" ;;
      esac
      bench_score "$out/$tag.emb" "$dir/labels.tsv" "$ratios" "$shuffles" "$out/$tag.json" ||
        bench_fail "scoring $out/$tag.emb failed"
      jsons+=("$out/$tag.json")
    done
    IFS=$'\t' read -r micro macro half < <(bench_f1s "${jsons[@]}")
    f1_half[$variant]=$half
    first=$out/$name-$variant-g$gamma-s${seeds%% *}.txt
    messages=- on_u=- on_device=-
    if [[ $variant != deepwalk ]]; then
      messages=$(printf '%.2f' "$(field "$first" messages_mean)")
      jumps=$(field "$first" predicted_hops)
      on_u=$(share "$(field "$first" jump_vs_skipped_edge)" "$jumps")
      on_device=$(share "$(field "$first" jump_vs_previous_edge)" "$jumps")
    fi
    gap=$(awk -v a="$half" -v b="${f1_half[deepwalk]}" 'BEGIN { printf "%+.3f", a - b }')
    rows+=("$(printf '%-11s %-22s %-22s %7s %8s %8s %9s %6s' "$variant" "$micro" "$macro" "$gap" "$messages" \
      "$on_u" "$on_device" "$(field "$first" epochs)")")
  done
  unset f1_half
  echo
  echo "== $name (gamma $gamma, l 40, paper mode, epsilon 2; DeepWalk protocol, $shuffles shuffles; seeds $seeds)"
  printf '%-11s %-22s %-22s %7s %8s %8s %9s %6s\n' "" "Micro-F1 ${ratios//,/ \/ }" "Macro-F1" "gap@0.5" \
    "msgs" "on N(u)" "on N(dev)" epochs
  printf '%s\n' "${rows[@]}"
done
