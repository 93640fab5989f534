#!/usr/bin/env bash
# A server killed with SIGKILL in the middle of a job and started again on
# the same data directory (--data_dir, server/store): every device resumes
# its session with its resume token, and the interrupted job itself is
# continued from its journal (replayed, then run on: job_continued, same
# job id, not run again) to its end, with its accounting complete.
#
# Usage: server_restart_tls.sh BUILD_DIR DATASETS_DIR OUT_DIR JOB
#   JOB: fedwalk (killed in the walk phase) or secure-compare (killed while
#   the comparison sessions run); fedwalk-offline: as fedwalk, but a tenth
#   of the devices die as they touch their first walk and come back 6 s
#   later, after the restart, so the relay holds hops for them when the
#   server is killed: the restarted server must queue those again
#   (relay_restored) and deliver every one when they resume, and no walk
#   is lost; secure-compare-tampered: as
#   secure-compare, but one answer digest in the journal is altered before
#   the restart, so the replay differs from it: the job must then be
#   recorded as abandoned (not continued) and the plan run again under a
#   new job id to a verified end
# Prints what it checks; exit status 0 when every check passed, 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=tls_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tls_test_lib.sh"

[[ $# -eq 4 ]] || { echo "usage: $0 BUILD_DIR DATASETS_DIR OUT_DIR fedwalk[-offline]|secure-compare[-tampered]" >&2; exit 2; }
build=$1
datasets=$2
out=$3
job=$4
bin=$build/bin
graph=$datasets/karate
[[ -f $graph/edges.tsv ]] || { echo "$0: no karate in $datasets" >&2; exit 2; }
for tool in nodefl-server nodefl-emulate nodefl-ca; do
  [[ -x $bin/$tool ]] || { echo "$0: $bin/$tool not built" >&2; exit 2; }
done
kill_after=${NODEFL_RESTART_KILL_AFTER:-0.5}
case $job in
  fedwalk|fedwalk-offline)
    # Enough walks that the phase lasts past the kill; paper mode walks
    # from device to device through the relay. A stall window of 15 s: on
    # a loaded machine a walk may wait seconds for a hop, and a walk whose
    # hop the kill took (docs/reliability.md: one accepted in the last
    # instant and in flight to its device) is issued again after it.
    job_args=(--job fedwalk --fedwalk_mode paper --fedwalk_walks_per_vertex 40 --fedwalk_walk_stall_floor_ms 15000)
    emulator_args=(--job fedwalk --fedwalk-mode paper --unlimited-budget)
    if [[ $job == fedwalk-offline ]]; then
      # The dead are away well within the server's offline grace (30 s),
      # so the job waits for them; the kill comes while they are away.
      # The relay writes its queues every 20 ms here (default 100).
      emulator_args+=(--faults "kill=0.1@walks,revive=6s")
      job_args+=(--relay_journal_ms 20)
      kill_after=${NODEFL_RESTART_KILL_AFTER:-1.5}
    fi
    interrupted=fedwalk-walks ;;
  secure-compare|secure-compare-tampered)
    job_args=(--job secure-compare --compare_mode base)
    emulator_args=(--job secure-compare)
    interrupted=secure-compare ;;
  *) echo "$0: JOB is fedwalk, fedwalk-offline, secure-compare or secure-compare-tampered, not '$job'" >&2; exit 2 ;;
esac

rm -rf "$out"
mkdir -p "$out"
n=34
pki=$out/pki
make_pki "$bin" "$pki" "$n"

server_pid=
emulator_pid=
cleanup() {
  [[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null || true
  [[ -n $emulator_pid ]] && kill "$emulator_pid" 2>/dev/null || true
}
trap cleanup EXIT

# Below Linux's ephemeral range (32768 and up), so that no outgoing
# connection holds the port when the server comes back on it.
port=$((20000 + RANDOM % 12000))
start_server() {  # LOG
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 10)) --exit_after_jobs 1 --data_dir "$out/state" --output_dir "$out/outputs" \
    --idle_timeout_ms 600000 --heartbeat_interval_ms 60000 "${job_args[@]}" >/dev/null 2>"$1" &
  server_pid=$!
  wait_listening "$server_pid" "$1"
}
# wait_for PATTERN FILE SECONDS
wait_for() {
  for _ in $(seq $(($3 * 10))); do grep -qE "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# The first start takes another port if this one is taken.
for _ in 1 2 3 4 5; do
  start_server "$out/server1.log" && break
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  port=$((20000 + RANDOM % 12000))
done
[[ -n $server_pid ]] || { echo "FAIL: the server did not start:"; cat "$out/server1.log"; exit 1; }
$bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
  "${emulator_args[@]}" --threads 2 --timeout 600 >"$out/emulator.txt" 2>"$out/emulator.log" &
emulator_pid=$!
# The kill comes half a second (fedwalk-offline: 1.5 s) into round 2 of the
# interrupted job: the walks, or the comparison sessions.
started="event=job_started .*kind=$interrupted "
wait_for "$started" "$out/server1.log" 120 || { echo "FAIL: the $interrupted job never started"; exit 1; }
id=$(grep -E "$started" "$out/server1.log" | head -1 | grep -o ' job=[0-9]*' | cut -d= -f2)
wait_for "event=job_round job=$id round=2 " "$out/server1.log" 120 ||
  { echo "FAIL: the $interrupted job (job $id) never reached round 2"; exit 1; }
sleep "$kill_after"
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=
echo "killed the server (SIGKILL) in round 2 of job $id ($interrupted)"
if grep -qE "event=job_finished .*kind=$interrupted " "$out/server1.log"; then
  echo "FAIL: the $interrupted job had finished before the kill: the test did not interrupt it"
  exit 1
fi

if [[ $job == *-tampered ]]; then
  # The journal's last event: its digest no longer matches its replay.
  python3 - "$out/state/server-state.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("SELECT job_id, seq FROM job_events ORDER BY job_id DESC, seq DESC LIMIT 1").fetchone()
db.execute("UPDATE job_events SET digest = digest + 1 WHERE job_id = ? AND seq = ?", row)
db.commit()
print(f"tampered with event {row[1]} of job {row[0]}")
PY
fi

start_server "$out/server2.log" || { echo "FAIL: the server did not start again:"; cat "$out/server2.log"; exit 1; }
emulator_status=0
wait "$emulator_pid" || emulator_status=$?
emulator_pid=
wait_server_exit "$server_pid"
server_pid=

field() {  # EVENT_REGEX FIELD: the first value of FIELD on a matching line of server2.log
  grep -E "$1" "$out/server2.log" | head -1 | grep -o " $2=[^ ]*" | head -1 | cut -d= -f2- | tr -d '"'
}
check "the restarted server read its state: $n sessions, one job interrupted" \
  test "$(field 'event=state_restored' sessions)/$(field 'event=state_restored' jobs_interrupted)" = "$n/1"
if [[ $job == *-tampered ]]; then
  check "the tampered journal is not continued: job $id abandoned, cause server restart" \
    grep -qE "event=job_abandoned job=$id kind=$interrupted .*reason=\"?server restart.*not_continued=\"?event [0-9]+ of [0-9]+ replayed differently" \
    "$out/server2.log"
  id=$(field 'event=job_started' job)
  check "the plan ran again under a new job id ($id)" test -n "$id"
else
  check "the interrupted $interrupted job $id is continued from its journal" \
    grep -qE "event=job_continued job=$id kind=$interrupted " "$out/server2.log"
  check "no job abandoned, none started again" \
    test "$(grep -cE 'event=(job_abandoned|job_started)' "$out/server2.log")" = 0
  echo "continued: $(grep -E 'event=job_continued' "$out/server2.log" | head -1 | cut -d' ' -f3- | cut -c1-300)"
fi
check "every device resumed its session (no new session)" \
  test "$(field 'event=stopped' resumes)" -ge "$n"
check "the restarted server exited 0 (every job of the plan verified)" test "$server_status" = 0
check "the emulator exited 0 (every device finished)" test "$emulator_status" = 0
case $job in
  fedwalk|fedwalk-offline)
    line=$(grep -E "event=job_finished job=$id kind=fedwalk-walks " "$out/server2.log" | head -1)
    get() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2; }
    check "the job finished (job $id)" test -n "$line"
    check "every walk slot accounted: completed + dead ends + lost = slots" \
      test "$(($(get completed) + $(get dead_ends) + $(get lost)))" = "$(get walk_slots)"
    check "every issue accounted: issued = slots + reissued ($(get issued) issued, $(get reissued) reissued)" \
      test "$(get issued)" = "$(($(get walk_slots) + $(get reissued)))"
    check "walks completed ($(get completed) of $(get walk_slots))" test "$(get completed)" -gt 0
    if [[ $job == fedwalk-offline ]]; then
      restored=$(field 'event=relay_restored' messages)
      check "the restarted relay queued again the hops the killed one held ($restored)" test "${restored:-0}" -gt 0
      check "every restored hop reached its device: acknowledged ($(field 'event=stopped' relay_restored_acked) of $restored)" \
        test "$(field 'event=stopped' relay_restored_acked)" = "$restored"
      check "no walk lost, every slot complete or at a dead end ($(get lost) lost, $(get reissued) reissued)" \
        test "$(get lost)/$(($(get completed) + $(get dead_ends)))" = "0/$(get walk_slots)"
      check "the dead died and came back: $(grep -o 'killed [0-9]* (for good [0-9]*, revived [0-9]*' "$out/emulator.txt" | head -1)" \
        grep -qE 'killed [1-9][0-9]* \(for good 0, revived [1-9]' "$out/emulator.txt"
    fi ;;
  secure-compare*)
    line=$(grep -E "event=job_finished job=$id kind=secure-compare " "$out/server2.log" | head -1)
    get() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2; }
    check "the job finished (job $id)" test -n "$line"
    check "every comparison settled: done + aborted = sessions ($(get done) done, $(get aborted) aborted)" \
      test "$(($(get done) + $(get aborted)))" = "$(get sessions)" ;;
esac
if ((failed)); then
  grep -E 'event=(state_restored|relay_restored|job_abandoned|job_continued|job_started|job_finished|job_reconnects|stopped)|level=error' \
    "$out/server2.log" | cut -c1-400 || true
  tail -n 8 "$out/emulator.txt" || true
  echo "server logs: $out/server1.log $out/server2.log; devices: $out/emulator.txt"
  echo "server restart ($job): FAIL"
  exit 1
fi
echo "server restart ($job): PASS"
