#!/usr/bin/env bash
# Centralized baselines for FedWalk, side by side in one run on one dataset:
#   1. nodefl-deepwalk: uniform DeepWalk walks (γ = 80, l = 40) and nodefl's
#      SkipGram (w = 10, d = 128, 5 negatives, linear learning-rate decay);
#      the walks are also written to a file;
#   2. gensim Word2Vec (sg=1, same settings, --sample 0) on exactly those
#      walks, when python3-gensim is installed;
#   3. the DeepWalk protocol (Micro/Macro-F1 at training ratios 0.1, 0.5,
#      0.9; 5 shuffles) on both embeddings.
# Prints SkipGram tokens/s of both trainers on the same walks and cores.
#
# Usage: tests/bench/deepwalk-baselines.sh [--graph DIR] [--threads T] [--gamma G] [--no-build]
#   --graph    dataset with labels.tsv (default ../shared/datasets/blogcatalog)
#   --threads  training threads / gensim workers (default: all cores)
#   --gamma    walks per vertex (default 80, the paper's; FedWalk runs at
#              scale may use fewer, compare at the same value)
# Outputs in build/bench/baselines-<dataset>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/blogcatalog
threads=$(nproc)
gamma=80
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --gamma) gamma=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "deepwalk-baselines.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/labels.tsv ]] || { echo "deepwalk-baselines.sh: no labels.tsv in '$graph'" >&2; exit 2; }
if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-deepwalk >/dev/null
fi
python=/usr/bin/python3
[[ -x $python ]] || python=python3
name=$(basename "$graph")
out=build/bench/baselines-$name$([[ $gamma == 80 ]] || echo "-gamma$gamma")
mkdir -p "$out"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); dataset $name; $threads threads; gamma $gamma"

echo
echo "== nodefl DeepWalk (walks + SkipGram)"
start=$(date +%s.%N)
build/host/bin/nodefl-deepwalk --graph "$graph" --output "$out/nodefl.emb" \
  --walks-out "$out/walks.txt" --gamma "$gamma" --threads "$threads" --seed 1 2>"$out/nodefl.log" | tee "$out/nodefl.txt"
echo "wall time (walks + training + writing): $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

gensim=0
echo
echo "== gensim Word2Vec on the same walks"
start=$(date +%s.%N)
if $python server/tools/gensim_deepwalk.py --walks "$out/walks.txt" --output "$out/gensim.emb" \
     --workers "$threads" --sample 0 2>"$out/gensim.log" | tee "$out/gensim.txt"; then
  gensim=1
  echo "wall time (gensim training + writing, on the walks above): $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
else
  echo "(skipped: $(tail -n 1 "$out/gensim.log"))"
fi

for which in nodefl $([[ $gensim == 1 ]] && echo gensim); do
  echo
  echo "== DeepWalk protocol: $which"
  $python server/tools/score_embeddings.py --embeddings "$out/$which.emb" --labels "$graph/labels.tsv" \
    --ratios 0.1,0.5,0.9 --shuffles 5 --json "$out/$which-scores.json" 2>/dev/null
done
