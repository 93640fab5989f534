#!/usr/bin/env bash
# Training speed of nodefl's SkipGram against gensim's Word2Vec on the same
# DeepWalk walks, side by side and repeated (speed only; the F1 comparison
# is tests/bench/skipgram-vs-gensim.sh):
#   - the walks: nodefl-deepwalk --walks-out (uniform, l = 40, seed 1), one
#     file per graph and γ;
#   - per repeat, in alternating order: gensim 4 Word2Vec in corpus-file
#     mode (sg = 1, window 10, d = 128, 5 negatives, one epoch, no
#     subsampling; its time includes reading the file and the vocabulary,
#     as gensim does both inside the call), then nodefl-skipgram with one
#     epoch and with the default epochs (load_s = reading the same file,
#     train_s = training), then nodefl-skipgram with one epoch on one
#     thread (how well the second thread pays off);
#   - prints the median over the repeats of each: seconds, tokens/s, and
#     the ratios gensim time / nodefl time (file to model, both sides).
# This VM's speed varies between minutes; alternating and taking medians
# keeps both trainers under the same conditions.
#
# Usage: tests/bench/skipgram-speed.sh [options]
#   --graphs "G ..."  dataset names in ../shared/datasets, or folder paths
#                     (default "karate cora blogcatalog")
#   --gammas "N ..."  walks per vertex (default "10 80")
#   --threads T       nodefl threads and gensim workers (default 2)
#   --repeats R       runs of each trainer (default 3)
#   --no-build        use build/host/bin as it is
#   -h, --help        this text
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/bench/bench_lib.sh

graphs="karate cora blogcatalog"
gammas="10 80"
threads=2
repeats=3
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graphs) graphs=$2; shift 2 ;;
    --gammas) gammas=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) bench_help; exit 0 ;;
    *) bench_fail "unknown argument '$1' (see --help)" ;;
  esac
done
bench_require_graphs edges.tsv $graphs
bench_require_whole $gammas $threads $repeats
python=$bench_python
if ((build)); then
  bash toolchains/install-deps.sh host >/dev/null
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-deepwalk nodefl-skipgram >/dev/null
fi
$python -c 'import gensim' 2>/dev/null || { echo "skipgram-speed.sh: python3-gensim is not installed (apt-get install python3-gensim)" >&2; exit 2; }
bin=build/host/bin
out=build/bench/skipgram-speed
mkdir -p "$out"
results=$out/results.tsv
printf 'graph\tgamma\ttrainer\trepeat\tepochs\ttokens\tseconds\n' >"$results"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $threads threads; $repeats repeats"
echo "gensim $($python -c 'import gensim; print(gensim.__version__)')"

# record TRAINER REPEAT EPOCHS TOKENS SECONDS
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$gamma" "$1" "$2" "$3" "$4" "$5" >>"$results"; }

# nodefl_run TRAINER REPEAT THREADS ARGS...: nodefl-skipgram on the walks file.
nodefl_run() {
  local trainer=$1 repeat=$2 t=$3 line
  shift 3
  line=$($bin/nodefl-skipgram --walks "$work/walks.txt" --vertices "$vertices" --output "$work/nodefl.emb" \
           --threads "$t" --seed 1 "$@" 2>/dev/null | tr '\n' ' ')
  local epochs tokens load train
  epochs=$(grep -o ' epochs=[^ ]*' <<<"$line" | cut -d= -f2)
  tokens=$(grep -o 'tokens=[^ ]*' <<<"$line" | head -1 | cut -d= -f2)
  load=$(grep -o 'load_s=[^ ]*' <<<"$line" | cut -d= -f2)
  train=$(grep -o 'train_s=[^ ]*' <<<"$line" | cut -d= -f2)
  record "$trainer (train)" "$repeat" "$epochs" "$tokens" "$train"
  record "$trainer (load+train)" "$repeat" "$epochs" "$tokens" "$(awk -v a="$load" -v b="$train" 'BEGIN { print a + b }')"
}

for g in $graphs; do
  dir=$(bench_graph_dir "$g")
  name=$(basename "$g")
  for gamma in $gammas; do
    work=$out/$name-gamma$gamma
    mkdir -p "$work"
    vertices=$($bin/nodefl-deepwalk --graph "$dir" --output "$work/walks-only.emb" --walks-out "$work/walks.txt" \
                 --gamma "$gamma" --threads "$threads" --seed 1 --epochs 1 2>/dev/null | grep -o 'nodes=[0-9]*' | cut -d= -f2)
    echo
    echo "== $name, gamma $gamma ($(wc -w <"$work/walks.txt") tokens)"
    for ((r = 1; r <= repeats; r++)); do
      line=$($python server/tools/gensim_deepwalk.py --walks "$work/walks.txt" --output "$work/gensim.emb" \
               --mode corpus-file --workers "$threads" --sample 0 --seed 1 2>/dev/null | tail -n 1)
      record "gensim corpus-file" "$r" 1 "$(awk '{ print $2 }' <<<"$line")" "$(awk '{ print $4 }' <<<"$line")"
      nodefl_run "nodefl 1 epoch" "$r" "$threads" --epochs 1
      nodefl_run "nodefl default" "$r" "$threads"
      nodefl_run "nodefl 1 epoch 1 thread" "$r" 1 --epochs 1
    done
    # Medians per trainer, and gensim's median time over each one's.
    awk -F'\t' -v g="$name" -v y="$gamma" '
      $1 == g && $2 == y { k = $3; n[k]++; s[k, n[k]] = $7; e[k] = $5; t[k] = $6; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
      function median(k,   i, j, x, c) {
        c = n[k]
        for (i = 1; i <= c; i++) a[i] = s[k, i]
        for (i = 2; i <= c; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
      }
      END {
        base = median("gensim corpus-file")
        for (i = 1; i <= m; i++) {
          k = order[i]; md = median(k)
          printf "  %-32s %2d ep %10d tokens  %7.2f s  %9.0f tokens/s  gensim time / this: %.1fx\n", k, e[k], t[k], md, t[k] / md, base / md
        }
      }' "$results"
  done
done
echo
echo "results: $results"
