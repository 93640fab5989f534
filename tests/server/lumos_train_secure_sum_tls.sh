#!/usr/bin/env bash
# Lumos training with secure sum over TLS against the same run without it:
# Cora's first NODES nodes (the induced subgraph), strict mode, the same
# parameter seed (lumos_train_seed) and the same device noise (nodefl-emulate
# --noise-seed), trained once plain and once with --secure-sum
# (lumos_secure_sum=true). The secure run must finish every aggregation and
# end within TOLERANCE of the plain run's test accuracy, or within one test
# node when that is more (the two runs differ only by the fixed-point code's
# rounding and clipping, which Adam can carry into a few predictions).
#
# Usage: lumos_train_secure_sum_tls.sh DATASETS_DIR BUILD_DIR OUT_DIR [EPOCHS] [TOLERANCE] [NODES]
#   (defaults: 5 epochs, 0.02, 300 nodes)
# Prints one line per run and a verdict line starting "secure sum vs plain:";
# exit status 0 when the verdict is PASS, 1 otherwise, 2 for bad arguments.
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: $0 DATASETS_DIR BUILD_DIR OUT_DIR [EPOCHS] [TOLERANCE]" >&2; exit 2; }
datasets=$1
build=$2
out=$3
epochs=${4:-5}
tolerance=${5:-0.02}
nodes=${6:-300}
[[ $nodes =~ ^[1-9][0-9]*$ ]] || { echo "$0: NODES is a positive whole number, not '$nodes'" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[[ -f $datasets/cora/edges.tsv ]] || { echo "$0: no Cora in $datasets" >&2; exit 2; }

graph=$out/cora$nodes
mkdir -p "$graph"
for f in edges labels features; do
  awk -F'\t' -v f=$f -v n="$nodes" '$1 < n && (f != "edges" || $2 < n)' "$datasets/cora/$f.tsv" >"$graph/$f.tsv"
done

# One run: its name, then run-lumos.sh options.
run() {
  local name=$1
  shift
  bash "$repo/examples/lumos/run-lumos.sh" --graph "$graph" --train --epochs "$epochs" --modes strict \
    --noise-seed 7 "$@" --build-dir "$build" --no-build --no-install --no-plot --out "$out/$name" \
    -- --lumos_train_seed 1 >"$out/$name.log" 2>&1 || {
    echo "$0: the $name run failed (exit $?); its output: $out/$name.log" >&2
    tail -20 "$out/$name.log" >&2
    exit 1
  }
}
# A field of the lumos-train job's summary line in a run's server log.
field() {
  grep -E "event=job_finished .*kind=lumos-train " "$out/$1/strict/server.log" | grep -o " $2=[^ ]*" | head -1 |
    cut -d= -f2- | tr -d '"'
}

run plain
run secure --secure-sum
plain=$(field plain final_test_accuracy)
secure=$(field secure final_test_accuracy)
done_=$(field secure aggregations_done)
aborted=$(field secure aggregations_aborted)
echo "test nodes: $(field plain final_test_nodes)"
echo "plain:  final test accuracy $plain, $(field plain seconds_epochs) s of epochs, bytes up per device per epoch $(field plain bytes_up_per_device_epoch)"
echo "secure: final test accuracy $secure, $(field secure seconds_epochs) s of epochs, bytes up per device per epoch $(field secure bytes_up_per_device_epoch), aggregations done $done_, aborted $aborted, clipped $(field secure clipped)"
verdict=$(awk -v p="$plain" -v s="$secure" -v t="$tolerance" -v n="$(field plain final_test_nodes)" 'BEGIN {
  d = s - p; if (d < 0) d = -d
  node = n > 0 ? 1 / n + 1e-9 : 0
  allowed = t > node ? t : node
  printf "%s: difference %.4f (allowed %.4f)", (d <= allowed ? "PASS" : "FAIL"), d, allowed }')
[[ $done_ == "$epochs" && $aborted == 0 ]] || verdict="FAIL: $done_ of $epochs aggregations done, $aborted aborted"
echo "secure sum vs plain: $verdict"
[[ $verdict == PASS* ]]
