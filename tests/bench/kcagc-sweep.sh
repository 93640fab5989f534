#!/usr/bin/env bash
# kCAGC's accuracy, NMI and macro-F1 (mean ± sd over seeds) with its secure
# sums, intersections and wall time, one table row per configuration, from
# nodefl-kcagc-sim (docs/kcagc.md). Every run uses one core.
#
# Usage: tests/bench/kcagc-sweep.sh [options] [CONFIG ...]
#   --graph DIR         dataset in the shared layout (default ../shared/datasets/cora)
#   --seeds "S ..."     seeds per configuration (default "1 2 3 4 5")
#   --build-dir DIR     where nodefl-kcagc-sim is built (default build/host)
#   --no-build          use the binary already there
#   --common "FLAGS"    flags added to every configuration (e.g. "--filter-order 9")
#   CONFIG              "LABEL=FLAGS", e.g. "kcagc L=2 k^=2k=--mode kcagc
#                       --participants 2 --local-clusters 2k" (the label ends
#                       at the first '=' followed by '--'); default: the Cora
#                       grid of docs/kcagc.md (central; basic and kCAGC with
#                       k^ = k, 2k, 4k at L = 2, 4, 8, 16; the tree at L = 8, 16;
#                       the joint mode is not in it, since it refuses
#                       --space full: give "joint L=2=--mode joint ...")
# Prints a markdown table: configuration, accuracy, NMI, macro-F1 (each
# mean ± sd in %), intersections, secure sums, aggregation rounds, the
# subspace iteration's steps (central's whitened space and the joint mode),
# seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/cora
seeds="1 2 3 4 5"
build_dir=build/host
build=1
common=""
configs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --common) common=$2; shift 2 ;;
    -h|--help) sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    --*) echo "kcagc-sweep.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
[[ -f $graph/features.tsv ]] || { echo "kcagc-sweep.sh: '$graph' has no features.tsv" >&2; exit 2; }
if [[ ${#configs[@]} -eq 0 ]]; then
  configs+=("central=--mode central")
  for l in 2 4 8 16; do configs+=("basic L=$l=--mode basic --participants $l"); done
  for kh in 1 2 4; do
    for l in 2 4 8 16; do configs+=("kcagc L=$l k^=${kh}k=--mode kcagc --participants $l --local-clusters ${kh}k"); done
  done
  for kh in 1 2 4; do
    for l in 8 16; do configs+=("tree L=$l k^=${kh}k=--mode tree --participants $l --local-clusters ${kh}k"); done
  done
fi
if [[ $build -eq 1 ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DNODEFL_WERROR=ON >/dev/null
  ninja -C "$build_dir" -j1 nodefl-kcagc-sim >/dev/null
fi
sim=$build_dir/bin/nodefl-kcagc-sim
[[ -x $sim ]] || { echo "kcagc-sweep.sh: $sim is not built" >&2; exit 2; }

echo "| configuration | accuracy % | NMI % | macro-F1 % | intersections | secure sums | rounds | steps | s |"
echo "|---|---|---|---|---|---|---|---|---|"
for config in "${configs[@]}"; do
  label=${config%%=--*}
  flags=--${config#*=--}
  for s in $seeds; do
    # shellcheck disable=SC2086
    "$sim" --graph "$graph" $flags $common --seed "$s" --quiet
  done | awk -v label="$label" '
    function stats(sum, sq, n) { m = sum / n; v = sq / n - m * m; return sprintf("%.2f ± %.2f", 100 * m, 100 * sqrt(v > 0 ? v : 0)) }
    /^accuracy/ { a += $2; a2 += $2 * $2; nm += $4; nm2 += $4 * $4; f += $6; f2 += $6 * $6; n++ }
    /^intersections/ {
      inter += $2
      for (i = 1; i < NF; i++) { if ($i == "sums") sums += $(i + 1) + 0; if ($i == "rounds") rounds += $(i + 1) + 0 }
    }
    /spectral steps/ { for (i = 1; i < NF; i++) if ($i == "steps") steps += $(i + 1) + 0 }
    /wall/ { for (i = 1; i <= NF; i++) if ($i == "wall") secs += $(i + 1) }
    END {
      if (n == 0) { printf "| %s | failed | | | | | | | |\n", label; exit }
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.2f |\n", label, stats(a, a2, n), stats(nm, nm2, n), stats(f, f2, n),
             inter ? sprintf("%.0f", inter / n) : "-", sums ? sprintf("%.0f", sums / n) : "-",
             rounds ? sprintf("%.0f", rounds / n) : "-", steps ? sprintf("%.1f", steps / n) : "-", secs / n
    }'
done
