#!/usr/bin/env bash
# nodefl's SkipGram against gensim's Word2Vec on the same DeepWalk walks, at
# several walk counts per vertex (γ), side by side in one run:
#   - the walks: nodefl-deepwalk --walks-out (uniform, l = 40, seed 1);
#   - nodefl's default (epochs chosen from the walks: enough passes for 32
#     occurrences of each edge the walks crossed, see
#     server/fedwalk/skipgram/include/nodefl/server/fedwalk/skipgram/corpus_coverage.h),
#     nodefl with one epoch (the default before), with one epoch and gensim
#     4's initial range (--init-range 1), and with 2 epochs; learning rate
#     0.025 decayed linearly to 0.0001 in every case;
#   - gensim 4 Word2Vec (sg = 1, same settings, no subsampling) in its
#     corpus-file mode (how gensim is usually run, and its fastest) and in
#     iterable mode (whose rate decays to 0.0001 like nodefl's);
#   - the DeepWalk protocol on every embedding (Micro/Macro-F1 at training
#     ratios 0.1, 0.5, 0.9; S shuffles).
# Prints one line per trainer: F1, epochs, training seconds, tokens/s and
# the speed-ups over gensim's corpus-file mode (in training time, and in
# tokens per second); all lines also go to
# build/bench/skipgram-vs-gensim/results.tsv.
#
# Usage: tests/bench/skipgram-vs-gensim.sh [options]
#   --graphs "G ..."  dataset names in ../shared/datasets with labels.tsv, or
#                     paths to folders in that layout (default "blogcatalog cora")
#   --gammas "N ..."  walks per vertex (default "10 40 80")
#   --threads T       nodefl threads and gensim workers (default 2)
#   --shuffles S      splits per training ratio (default 5)
#   --no-build        use build/host/bin as it is
#   -h, --help        this text
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/bench/bench_lib.sh

graphs="blogcatalog cora"
gammas="10 40 80"
threads=2
shuffles=5
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graphs) graphs=$2; shift 2 ;;
    --gammas) gammas=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --shuffles) shuffles=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) bench_help; exit 0 ;;
    *) bench_fail "unknown argument '$1' (see --help)" ;;
  esac
done
bench_require_graphs labels.tsv $graphs
bench_require_whole $gammas $threads $shuffles
python=$bench_python
if ((build)); then
  bash toolchains/install-deps.sh host >/dev/null
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-deepwalk >/dev/null
fi
$python -c 'import gensim' 2>/dev/null || { echo "skipgram-vs-gensim.sh: python3-gensim is not installed (apt-get install python3-gensim)" >&2; exit 2; }
bin=build/host/bin
out=build/bench/skipgram-vs-gensim
mkdir -p "$out"
results=$out/results.tsv
printf 'graph\tgamma\ttrainer\tmicro_0.1\tmicro_0.5\tmicro_0.9\tmacro_0.1\tmacro_0.5\tmacro_0.9\tepochs\ttrain_s\ttokens_per_s\n' >"$results"
# gensim's corpus-file mode ends its learning rate here with W workers.
half_alpha=$(awk -v w="$threads" 'BEGIN { printf "%.6f", 0.025 - (0.025 - 0.0001) / w }')
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $threads threads; $shuffles shuffles"
echo "gensim $($python -c 'import gensim; print(gensim.__version__)'); corpus-file mode's final learning rate with $threads workers: $half_alpha"

# score NAME EMB LABELS EPOCHS SECONDS TOKENS: scores EMB, prints and
# records one line.
score() {
  local name=$1 emb=$2 labels=$3 epochs=$4 seconds=$5 tokens=$6 f1
  f1=$($python server/tools/score_embeddings.py --embeddings "$emb" --labels "$labels" --ratios 0.1,0.5,0.9 \
         --shuffles "$shuffles" --threads "$threads" 2>/dev/null | awk '$1 ~ /^0\.[0-9]+$/ { m[NR] = $4; M[NR] = $7; n[++k] = NR }
         END { printf "%s\t%s\t%s\t%s\t%s\t%s", m[n[1]], m[n[2]], m[n[3]], M[n[1]], M[n[2]], M[n[3]] }')
  local rate
  rate=$(awk -v t="$tokens" -v s="$seconds" 'BEGIN { printf "%.0f", t / s }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$graph" "$gamma" "$name" "$f1" "$epochs" "$seconds" "$rate" >>"$results"
  awk -F'\t' -v name="$name" -v e="$epochs" -v s="$seconds" -v r="$rate" -v base_s="${gensim_s:-0}" -v base_r="${gensim_rate:-0}" '
    { printf "  %-30s Micro %s / %s / %s   Macro %s / %s / %s  %2d ep %7.1f s %9d tokens/s", name, $1, $2, $3, $4, $5, $6, e, s, r
      if (base_r > 0) printf "  %.1fx time, %.1fx tokens/s", base_s / s, r / base_r
      printf "\n" }' <<<"$f1"
}
# nodefl NAME ARGS...: trains with nodefl-deepwalk on the walks of seed 1.
nodefl() {
  local name=$1 out
  shift
  out=$($bin/nodefl-deepwalk --graph "$dir" --output "$work/$name.emb" --gamma "$gamma" --threads "$threads" \
          --seed 1 "$@" 2>/dev/null)
  score "$name" "$work/$name.emb" "$dir/labels.tsv" "$(grep -o ' epochs=[^ ]*' <<<"$out" | cut -d= -f2)" \
        "$(grep -o 'train_s=[^ ]*' <<<"$out" | cut -d= -f2)" "$(grep -o ' tokens=[^ ]*' <<<"$out" | cut -d= -f2)"
}
# gensim NAME MODE
gensim() {
  local line
  line=$($python server/tools/gensim_deepwalk.py --walks "$work/walks.txt" --output "$work/$1.emb" --mode "$2" \
           --workers "$threads" --sample 0 --seed 1 2>/dev/null | tail -n 1)
  local seconds tokens
  seconds=$(awk '{ print $4 }' <<<"$line") tokens=$(awk '{ print $2 }' <<<"$line")
  if [[ $2 == corpus-file ]]; then
    gensim_rate=$(awk -v t="$tokens" -v s="$seconds" 'BEGIN { printf "%.0f", t / s }')
    gensim_s=$seconds
  fi
  score "$1" "$work/$1.emb" "$dir/labels.tsv" 1 "$seconds" "$tokens"
}

for graph in $graphs; do
  dir=$(bench_graph_dir "$graph")
  for gamma in $gammas; do
    work=$out/$(basename "$graph")-gamma$gamma
    mkdir -p "$work"
    echo
    echo "== $graph, gamma $gamma (l = 40, window 10, d = 128, 5 negatives, no subsampling)"
    $bin/nodefl-deepwalk --graph "$dir" --output "$work/walks-only.emb" --walks-out "$work/walks.txt" \
      --gamma "$gamma" --threads "$threads" --seed 1 --epochs 1 >/dev/null 2>&1
    gensim_rate=0 gensim_s=0
    gensim "gensim corpus-file" corpus-file
    gensim "gensim iterable" iterable
    nodefl "nodefl (default)"
    nodefl "nodefl, 1 epoch" --epochs 1
    nodefl "nodefl, 1 epoch, gensim's range" --epochs 1 --init-range 1
    nodefl "nodefl, 2 epochs" --epochs 2
  done
done
echo
echo "results: $results"
