#!/usr/bin/env bash
# Lumos training (the lumos-train stage of the lumos-trees job, strict
# mode, GCN, node classification) with a tenth of the devices killed as
# they upload their first epoch (nodefl-emulate --faults kill=0.1@train),
# for good or brought back a second later: every epoch still updates the
# model from the devices that reported, the dead are stragglers given up
# once offline past the grace (not held to the epoch deadline), and the
# revived resume and finish. Cora's first 200 nodes (the induced
# subgraph), every node a TLS device.
#
# Usage: lumos_train_faults.sh BUILD_DIR DATASETS_DIR OUT_DIR killed|killed-and-revived
# Prints what it checks; exit status 0 when every check passed, 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=tls_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_test_lib.sh"

[[ $# -eq 4 ]] || { echo "usage: $0 BUILD_DIR DATASETS_DIR OUT_DIR killed|killed-and-revived" >&2; exit 2; }
build=$1
datasets=$2
out=$3
variant=$4
bin=$build/bin
case $variant in
  killed) faults="kill=0.1@train" ;;
  killed-and-revived) faults="kill=0.1@train,revive=1s" ;;
  *) echo "$0: the variant is killed or killed-and-revived, not '$variant'" >&2; exit 2 ;;
esac
[[ -f $datasets/cora/features.tsv ]] || { echo "$0: no cora in $datasets" >&2; exit 2; }
for tool in nodefl-server nodefl-emulate nodefl-ca; do
  [[ -x $bin/$tool ]] || { echo "$0: $bin/$tool not built" >&2; exit 2; }
done

rm -rf "$out"
mkdir -p "$out/graph"
for f in edges labels features; do
  awk -F'\t' -v f=$f '$1 < 200 && (f != "edges" || $2 < 200)' "$datasets/cora/$f.tsv" >"$out/graph/$f.tsv"
done
n=200
features=$(awk -F'\t' '$2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$out/graph/features.tsv")
classes=$(awk -F'\t' '$2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$out/graph/labels.tsv")
epochs=4
# The epoch deadline is far above what an epoch takes (well under a
# second here): a dead device that held its epoch to it would show.
epoch_deadline_ms=60000
grace_ms=2000

pki=$out/pki
make_pki "$bin" "$pki" "$n"

server_pid=
cleanup() { [[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
log=$out/server.log
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 12000))
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 10)) --job lumos-trees --lumos_privacy strict --exit_after_jobs 1 \
    --lumos_train node --lumos_features "$features" --lumos_classes "$classes" --lumos_model gcn \
    --lumos_epochs "$epochs" --lumos_epoch_deadline_ms "$epoch_deadline_ms" --offline_grace_ms "$grace_ms" \
    --idle_timeout_ms 600000 --heartbeat_interval_ms 60000 >/dev/null 2>"$log" &
  server_pid=$!
  wait_listening "$server_pid" "$log" && break
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
done
[[ -n $server_pid ]] || { echo "FAIL: the server did not start:"; cat "$log"; exit 1; }
emulator_status=0
$bin/nodefl-emulate --graph "$out/graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
  --job lumos-trees --lumos-train --faults "$faults" --threads 2 --timeout 600 \
  >"$out/emulator.txt" 2>"$out/emulator.log" || emulator_status=$?
wait_server_exit "$server_pid"
server_pid=

line=$(grep -E 'event=job_finished .*kind=lumos-train ' "$log" | head -1 || true)
get() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2 | tr -d '"'; }
killed=$(grep -oE 'killed [0-9]+ \(for good [0-9]+, revived [0-9]+' "$out/emulator.txt" | head -1 || true)
dead=$(grep -oE 'for good [0-9]+' <<<"$killed" | grep -oE '[0-9]+' || echo 0)
revived=$(grep -oE 'revived [0-9]+' <<<"$killed" | grep -oE '[0-9]+' || echo 0)
check "the training stage finished" test -n "$line"
check "devices died in training: $killed" test "$((dead + revived))" -eq 20
check "verified, no protocol error (error='$(get error)')" test "$(get verified)/$(get protocol_errors)" = "true/0"
check "every epoch updated the model ($(get epochs_updated) of $epochs)" test "$(get epochs_updated)" = "$epochs"
check "every device ready for training (ready $(get ready) of $(get participants))" \
  test "$(get ready)" = "$(get participants)"
seconds=$(get seconds_epochs)
check "the epochs did not wait for an epoch deadline (${seconds} s for $epochs epochs)" \
  awk -v s="${seconds:-1e9}" -v d="$epoch_deadline_ms" 'BEGIN { exit !(s < d / 1000) }'
if [[ $variant == killed ]]; then
  check "the dead straggle in the epochs after their death ($(get stragglers) straggler-epochs)" \
    test "$(get stragglers)" -ge "$dead"
  check "the survivors report their summaries ($(get summaries) of $((n - dead)))" \
    test "$(get summaries)" = "$((n - dead))"
  check "the dead are recorded as missing the report ($(get missed_report))" test "$(get missed_report)" = "$dead"
  check "the dead were named to the devices still at work, in each epoch after their death (gone=$(get gone))" \
    test "$(get gone)" -ge "$((dead * (epochs - 1)))"
else
  check "every device back and reporting its summary ($(get summaries) of $n)" test "$(get summaries)" = "$n"
  check "the emulator exited 0 (every device finished)" test "$emulator_status" = 0
fi
check "the server exited 0 (the plan verified)" test "$server_status" = 0
if ((failed)); then
  grep -E 'event=(job_finished|job_reconnects|stopped)|level=error' "$log" | cut -c1-600 || true
  tail -n 8 "$out/emulator.txt" || true
  echo "logs: $log $out/emulator.txt"
  echo "lumos training with faults ($variant): FAIL"
  exit 1
fi
echo "lumos training with faults ($variant): PASS"
