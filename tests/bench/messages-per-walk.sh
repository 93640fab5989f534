#!/usr/bin/env bash
# Messages per walk against Theorem 4.2: the whole FedWalk job over TLS
# (examples/fedwalk/run-fedwalk.sh) once per predictor probability p, each
# walk counting its own device-to-device messages; the table compares the
# measured mean (± standard error) with the recurrence of the paper's
# App. A.2 and with its printed Eq. 21, and a PNG is drawn when
# python3-matplotlib is installed.
#
# Usage: tests/bench/messages-per-walk.sh [--graph DIR] [--ps "0 0.1 0.2 0.3 0.4"]
#                                         [--gamma G] [--no-build]
#   --graph   dataset (default ../shared/datasets/karate)
#   --ps      predictor probabilities (default "0 0.1 0.2 0.3 0.4")
#   --gamma   walks per vertex (default 80)
# Outputs in build/bench/messages-per-walk/ (messages.tsv, messages.png).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/karate
ps="0 0.1 0.2 0.3 0.4"
gamma=80
build=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --ps) ps=$2; shift 2 ;;
    --gamma) gamma=$2; shift 2 ;;
    --no-build) build=(--no-build --no-install); shift ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "messages-per-walk.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
out=build/bench/messages-per-walk
mkdir -p "$out"
python=/usr/bin/python3
[[ -x $python ]] || python=python3
tsv=$out/messages.tsv
printf 'p\tmeasured_mean\tmeasured_stderr\ttheorem\n' > "$tsv"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); dataset $(basename "$graph"), gamma $gamma, l 40"
printf '\n%5s %10s %9s %12s %10s %9s\n' p walks mean stderr recurrence "Eq. 21"
first=1
for p in $ps; do
  args=("${build[@]}")
  [[ $first == 1 ]] || args=(--no-build --no-install)
  first=0
  run=$out/p$p
  bash examples/fedwalk/run-fedwalk.sh --graph "$graph" --modes paper --no-score --out "$run" "${args[@]}" \
    -- --fedwalk_p "$p" --fedwalk_walks_per_vertex "$gamma" >"$out/run-p$p.txt" 2>&1 ||
    { echo "run for p=$p failed, see $out/run-p$p.txt" >&2; exit 1; }
  line=$(grep 'event=job_finished' "$run/paper/server.log" | grep 'kind=fedwalk-walks')
  get() { grep -o " $1=[^ ]*" <<<"$line" | cut -d= -f2; }
  mean=$(get messages_per_walk); se=$(get messages_per_walk_stderr); rec=$(get theorem_4_2)
  eq21=$($python -c "import sys; sys.path.insert(0, 'server/tools'); import theorem42; print(theorem42.messages_eq21(40, $p))")
  printf '%s\t%s\t%s\t%s\n' "$p" "$mean" "$se" "$rec" >> "$tsv"
  printf '%5s %10s %9.3f %12.4f %10.3f %9.3f\n' "$p" "$(get completed)" "$mean" "$se" "$rec" "$eq21"
done
if $python server/tools/plot_messages_per_walk.py "$tsv" --output "$out/messages.png" --length 40 >/dev/null 2>&1; then
  echo "plot: $out/messages.png"
else
  echo "plot: skipped (python3-matplotlib not installed)"
fi
