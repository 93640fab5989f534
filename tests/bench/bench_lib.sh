# Shared by the benchmark scripts in this folder (sourced, not run): the
# arguments they all take, and scoring embeddings by the DeepWalk protocol.
# Each function that can fail prints "<script>: <why>" to stderr and exits
# 2 (bad arguments), with the calling script's name from $bench_name.

bench_name=$(basename "${BASH_SOURCE[1]:-bench}")

# The python with numpy and gensim (Debian's); pyenv's may lack them.
bench_python=/usr/bin/python3
[[ -x $bench_python ]] || bench_python=python3

# bench_help: prints the calling script's header comment (its --help).
bench_help() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[1]}"; }

bench_fail() { echo "$bench_name: $*" >&2; exit 2; }

# bench_graph_dir G: a dataset name in ../shared/datasets, or a folder path.
bench_graph_dir() { if [[ $1 == */* ]]; then echo "$1"; else echo "../shared/datasets/$1"; fi; }

# bench_require_graphs FILE G...: every graph's folder holds FILE.
bench_require_graphs() {
  local file=$1 g
  shift
  for g in "$@"; do
    [[ -f $(bench_graph_dir "$g")/$file ]] || bench_fail "no $(bench_graph_dir "$g")/$file"
  done
}

# bench_require_whole N...: each is a positive whole number.
bench_require_whole() {
  local n
  for n in "$@"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || bench_fail "'$n' is not a positive whole number"
  done
}

# bench_score EMB LABELS RATIOS SHUFFLES JSON: the DeepWalk protocol at the
# training ratios (comma-separated), results in JSON.
bench_score() {
  $bench_python server/tools/score_embeddings.py --embeddings "$1" --labels "$2" --ratios "$3" \
    --shuffles "$4" --json "$5" >/dev/null 2>&1
}

# bench_f1s JSON...: Micro-F1 per ratio joined by " / ", then Macro-F1 the
# same way, then Micro-F1 at 0.5 (tab-separated); averaged over the files
# (seeds). The ratios must include 0.5.
bench_f1s() {
  $bench_python - "$@" <<'EOF'
import json, sys
rows = [json.load(open(p))["results"] for p in sys.argv[1:]]
avg = lambda key, i: sum(r[i][key] for r in rows) / len(rows)
n = len(rows[0])
half = [i for i in range(n) if abs(rows[0][i]["ratio"] - 0.5) < 1e-9][0]
print("\t".join([" / ".join("%.4f" % avg("micro_f1_mean", i) for i in range(n)),
                 " / ".join("%.4f" % avg("macro_f1_mean", i) for i in range(n)),
                 "%.4f" % avg("micro_f1_mean", half)]))
EOF
}
