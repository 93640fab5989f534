#!/usr/bin/env bash
# The board client (nodefl-device, examples/device-linux) in a real job:
# nodefl-server runs paper-mode FedWalk on karate over TLS, three nodes are
# nodefl-device processes (under qemu-user when the client is cross-built)
# and nodefl-emulate plays the other 31 (--external-nodes). The job's
# accounting must equal an all-emulated run's: the same tree (every vertex
# in it, every device's part done), every walk slot completed, none lost,
# the same tokens, the same privacy accounting (encoder, epsilon per walk,
# encodings, unbounded releases). Values drawn from noise (the codebook,
# the score sensitivity) differ between any two runs and are not compared.
# Then a secure-comparison job (the oblivious transfers between devices)
# the same way: the same sessions, outcomes and greedy orientation as an
# all-emulated run. On the way it checks what a board needs beyond the job:
#   - node 33's client starts before the server listens: it backs off and
#     retries until it connects;
#   - node 0's client talks through a proxy that cuts its first connection
#     in the middle of the job (once 40 KB came from the server): it
#     reconnects and resumes its session, and the job loses nothing;
#   - the clients keep their lifetime privacy spend in a ledger file, and
#     a restarted client starts from it;
#   - SIGTERM: a client says Goodbye to the server and exits 0.
#
# Usage: device_client_job.sh HOST_BIN CLIENT DATASETS OUT [RUNNER...]
#   HOST_BIN  folder with nodefl-server, nodefl-emulate and nodefl-ca (a
#             host build)
#   CLIENT    the nodefl-device binary under test (any architecture)
#   RUNNER    what runs it, e.g. qemu-aarch64 or qemu-arm -L /usr/arm-linux-gnueabihf
#             (default: run it directly)
# Prints what it checks; exit status 0 when every check passed, 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=../server/tls_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../server/tls_test_lib.sh"

[[ $# -ge 4 ]] || { echo "usage: $0 HOST_BIN CLIENT DATASETS OUT [RUNNER...]" >&2; exit 2; }
bin=$1
client=$2
graph=$3/karate
out=$4
runner=("${@:5}")
[[ -f $graph/edges.tsv ]] || { echo "$0: no karate in $3" >&2; exit 2; }
for tool in nodefl-server nodefl-emulate nodefl-ca; do
  [[ -x $bin/$tool ]] || { echo "$0: $bin/$tool not built (the host build)" >&2; exit 2; }
done
[[ -x $client ]] || { echo "$0: $client not built" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"
n=34
clients=(0 5 33)  # a hub (degree 16), a leaf-ish node (4) and the other hub (17)
pki=$out/pki
make_pki "$bin" "$pki" "$n"
# Each client's neighbour list, as a board would keep it.
for id in "${clients[@]}"; do
  awk -v v="$id" '$1 == v { print $2 } $2 == v { print $1 }' "$graph/edges.tsv" >"$out/neighbours-$id.txt"
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { echo $((20000 + RANDOM % 12000)); }
# Walks may wait for a slow (emulated) board: a long stall window, so that
# a slow hop is not taken for a lost one.
job_args=(--job fedwalk --fedwalk_mode paper --fedwalk_walks_per_vertex 10 --fedwalk_walk_stall_floor_ms 60000)
start_server() {  # PORT LOG [ARGS...]
  local port=$1 log=$2
  shift 2
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 10)) --idle_timeout_ms 600000 --heartbeat_interval_ms 5000 "$@" >/dev/null 2>"$log" &
  server_pid=$!
  pids+=("$server_pid")
}
emulate() {  # PORT OUTFILE [ARGS...]
  local port=$1 file=$2
  shift 2
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --job fedwalk --fedwalk-mode paper --unlimited-budget --threads 2 --timeout 300 \
    "$@" >"$file" 2>"${file%.txt}.log"
}
device() {  # ID PORT [ARGS...]: a board client in the background (stdout: its summary line)
  local id=$1 port=$2
  shift 2
  "${runner[@]}" "$client" --server "127.0.0.1:$port" --id "$id" --ca "$pki/ca.crt" \
    --cert "$pki/devices/device-$id.crt" --key "$pki/devices/device-$id.key" \
    --neighbours "$out/neighbours-$id.txt" --job fedwalk --fedwalk-mode paper --vertices "$n" \
    --unlimited-budget --ledger-file "$out/ledger-$id.txt" "$@" \
    >>"$out/device-$id.txt" 2>>"$out/device-$id.log" &
  device_pid=$!
  pids+=("$device_pid")
}

# ---- run A: every device emulated ------------------------------------------
port=$(free_port)
start_server "$port" "$out/server-a.log" "${job_args[@]}" --exit_after_jobs 1 --output_dir "$out/outputs-a"
wait_listening "$server_pid" "$out/server-a.log" || { echo "FAIL: the server did not start"; cat "$out/server-a.log"; exit 1; }
emulate "$port" "$out/emulator-a.txt" || true
wait_server_exit "$server_pid"
status_a=$server_status

# ---- run B: three board clients and 31 emulated devices ---------------------
port=$(free_port)
declare -A device_pids
# Node 33 starts before the server listens: connection refused, backoff.
device 33 "$port" --exit-when-done --max-attempts 30 --backoff-max-ms 1000
device_pids[33]=$device_pid
# The server starts once node 33 has been refused (a client under qemu or
# a JVM may take a while to get there).
for _ in $(seq 300); do grep -q "reconnecting in" "$out/device-33.log" 2>/dev/null && break; sleep 0.1; done
start_server "$port" "$out/server-b.log" "${job_args[@]}" --exit_after_jobs 1 --output_dir "$out/outputs-b"
wait_listening "$server_pid" "$out/server-b.log" || { echo "FAIL: the server did not start"; cat "$out/server-b.log"; exit 1; }
# Node 0 through a proxy that cuts its first connection once 40 KB came
# from the server (the walks are under way by then: a hub forwards hundreds).
proxy_port=$(free_port)
python3 - "$proxy_port" "$port" 40000 >"$out/proxy.log" 2>&1 <<'PY' &
import socket, sys, threading
listen_port, target_port, cut_after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port)); srv.listen(4)
print("listening", flush=True)
cut = threading.Event()
def pipe(a, b, count):
    passed = 0
    try:
        while True:
            data = a.recv(65536)
            if not data: break
            b.sendall(data)
            passed += len(data)
            if count and passed >= cut_after and not cut.is_set():
                cut.set()
                print("cut the first connection after %d bytes from the server" % passed, flush=True)
                break
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
first = True
while True:
    c, _ = srv.accept()
    u = socket.create_connection(("127.0.0.1", target_port))
    threading.Thread(target=pipe, args=(c, u, False), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c, first), daemon=True).start()
    first = False
PY
pids+=($!)
for _ in $(seq 50); do grep -q listening "$out/proxy.log" && break; sleep 0.1; done
device 0 "$proxy_port" --exit-when-done --max-attempts 30 --backoff-max-ms 1000
device_pids[0]=$device_pid
device 5 "$port" --exit-when-done --max-attempts 30 --backoff-max-ms 1000
device_pids[5]=$device_pid
emulate "$port" "$out/emulator-b.txt" --external-nodes "$(IFS=,; echo "${clients[*]}")" || true
device_status=()
for id in "${clients[@]}"; do
  s=0
  wait "${device_pids[$id]}" || s=$?
  device_status+=("$id:$s")
done
wait_server_exit "$server_pid"
status_b=$server_status

# ---- the two runs' accounting -----------------------------------------------
field() {  # LOG EVENT_REGEX FIELD
  grep -E "$2" "$1" | head -1 | grep -o " $3=[^ ]*" | head -1 | cut -d= -f2- | tr -d '"'
}
check "run A (all emulated): the server verified the plan and exited 0" test "$status_a" = 0
check "run B (3 board clients): the server verified the plan and exited 0" test "$status_b" = 0
check "run B: every board client exited 0 (${device_status[*]})" \
  test "$(printf '%s\n' "${device_status[@]}" | grep -cv ':0$')" = 0
check "run B: the emulator played 31 devices, all finished" \
  grep -q "summary: devices 31, finished 31, failed 0" "$out/emulator-b.txt"
for id in "${clients[@]}"; do
  check "run B: board client $id finished its part of the job" \
    grep -qE "^device=$id job=fedwalk finished=1 end=\"job done\"" "$out/device-$id.txt"
done
hct='event=job_finished .*kind=fedwalk-hct '
walks='event=job_finished .*kind=fedwalk-walks '
ledger='event=privacy_ledger .*phase=fedwalk-walks '
for f in participants vertices_in_tree completed missed unreachable failed bins dissimilarity_bytes tree_bytes \
         bin_plan_bytes encoder protocol_errors; do
  a=$(field "$out/server-a.log" "$hct" "$f")
  b=$(field "$out/server-b.log" "$hct" "$f")
  check "tree (fedwalk-hct) $f: $b, as all emulated ($a)" test -n "$a" -a "$a" = "$b"
done
for f in participants keys_ready walk_slots completed dead_ends lost tokens; do
  a=$(field "$out/server-a.log" "$walks" "$f")
  b=$(field "$out/server-b.log" "$walks" "$f")
  check "walks $f: $b, as all emulated ($a)" test -n "$a" -a "$a" = "$b"
done
check "walks: every slot completed ($(field "$out/server-b.log" "$walks" completed) of $(field "$out/server-b.log" "$walks" walk_slots))" \
  test "$(field "$out/server-b.log" "$walks" completed)" = "$(field "$out/server-b.log" "$walks" walk_slots)"
for f in encoder epsilon devices_unbounded against_server; do
  a=$(field "$out/server-a.log" "$ledger" "$f")
  b=$(field "$out/server-b.log" "$ledger" "$f")
  check "privacy ledger (walks) $f: $b, as all emulated ($a)" test -n "$a" -a "$a" = "$b"
done
# Every encoding a device made is spent, also those of a walk that was
# dropped on its way and issued again: one per token when nothing was
# issued again, at least one per token when something was (a start a
# device had no room for is dropped before any encoding).
for run in a b; do
  log=$out/server-$run.log
  tokens=$(field "$log" "$walks" tokens) reissued=$(field "$log" "$walks" reissued)
  encodings=$(field "$log" "$ledger" encodings)
  if [[ $reissued == 0 ]]; then
    check "run $run: one encoding per token ($encodings for $tokens), no walk issued again" \
      test "$encodings" = "$tokens"
  else
    check "run $run: every encoding accounted ($encodings for $tokens tokens, $reissued walks issued again)" \
      test "$encodings" -ge "$tokens"
  fi
done

# ---- what a board needs beyond the job --------------------------------------
check "node 33 started before the server: it backed off and retried" \
  grep -q "reconnecting in" "$out/device-33.log"
check "node 0's first connection was cut mid-job: it reconnected" \
  grep -qE '^device=0 .* reconnects=[1-9]' "$out/device-0.txt"
check "... and resumed its session (the server counted a resume)" \
  test "$(field "$out/server-b.log" 'event=stopped' resumes)" -ge 1
spent=$(grep -o ' lifetime_epsilon=[^ ]*' "$out/device-0.txt" | head -1 | cut -d= -f2)
check "node 0 kept its lifetime privacy spend ($spent) in its ledger file" \
  grep -qx "lifetime_epsilon $spent" "$out/ledger-0.txt"

# ---- secure comparisons: the same three clients, all emulated vs not -------
# Every edge's comparison of the two ends' log-degrees (oblivious transfer
# between the devices, through the relay): the sessions, their outcomes
# and the greedy orientation must be the same whoever runs the devices.
compare_args=(--job secure-compare --exit_after_jobs 1)
port=$(free_port)
start_server "$port" "$out/server-compare-a.log" "${compare_args[@]}" --output_dir "$out/compare-a"
wait_listening "$server_pid" "$out/server-compare-a.log" || { echo "FAIL: the server did not start"; exit 1; }
emulate "$port" "$out/emulator-compare-a.txt" --job secure-compare || true
wait_server_exit "$server_pid"
compare_status_a=$server_status
port=$(free_port)
start_server "$port" "$out/server-compare-b.log" "${compare_args[@]}" --output_dir "$out/compare-b"
wait_listening "$server_pid" "$out/server-compare-b.log" || { echo "FAIL: the server did not start"; exit 1; }
compare_pids=()
for id in "${clients[@]}"; do
  device "$id" "$port" --job secure-compare --exit-when-done --max-attempts 30 --backoff-max-ms 1000
  compare_pids+=("$device_pid")
done
emulate "$port" "$out/emulator-compare-b.txt" --job secure-compare --external-nodes "$(IFS=,; echo "${clients[*]}")" || true
compare_device_failures=0
for p in "${compare_pids[@]}"; do wait "$p" || compare_device_failures=$((compare_device_failures + 1)); done
wait_server_exit "$server_pid"
compare='event=job_finished .*kind=secure-compare '
check "secure comparisons: both servers verified the job and exited 0 ($compare_status_a, $server_status)" \
  test "$compare_status_a/$server_status" = 0/0
check "secure comparisons: every board client finished and exited 0" \
  test "$compare_device_failures/$(grep -c 'job=secure-compare finished=1 end="job done"' "$out"/device-*.txt | \
        awk -F: '{ s += $2 } END { print s }')" = "0/3"
for f in participants requested_edges sessions done aborted comparisons messages bytes edges_kept_both \
         edges_kept_one edges_unknown; do
  a=$(field "$out/server-compare-a.log" "$compare" "$f")
  b=$(field "$out/server-compare-b.log" "$compare" "$f")
  check "secure comparisons $f: $b, as all emulated ($a)" test -n "$a" -a "$a" = "$b"
done
check "secure comparisons: the same greedy orientation, edge for edge" \
  cmp -s "$(field "$out/server-compare-a.log" "$compare" greedy_init)" \
         "$(field "$out/server-compare-b.log" "$compare" greedy_init)"

# SIGTERM: a fresh server waiting for a job, node 0 restarted on its ledger.
port=$(free_port)
start_server "$port" "$out/server-c.log" "${job_args[@]}"
wait_listening "$server_pid" "$out/server-c.log" || { echo "FAIL: the server did not start"; cat "$out/server-c.log"; exit 1; }
mv "$out/device-0.txt" "$out/device-0-job.txt"  # run B's summary, kept for the failure report
device 0 "$port" --max-attempts 5
for _ in $(seq 300); do grep -q "device=0 .*registered\|event=registered .*device=0 " "$out/server-c.log" 2>/dev/null && break; grep -q "connected to" "$out/device-0.log" && break; sleep 0.1; done
sleep 1
kill -TERM "$device_pid"
term_status=0
for _ in $(seq 100); do kill -0 "$device_pid" 2>/dev/null || break; sleep 0.1; done
wait "$device_pid" || term_status=$?
check "SIGTERM: the client exited 0 ($term_status) within 10 s, saying why" \
  grep -qE '^device=0 .*end="SIGTERM"' "$out/device-0.txt"
check "... and said Goodbye to the server" grep -qE 'event=goodbye .*device=0 ' "$out/server-c.log"
check "... starting from the spend its ledger file held ($spent)" \
  grep -qE "^device=0 .* lifetime_epsilon=$spent " "$out/device-0.txt"
kill "$server_pid" 2>/dev/null || true

echo "board clients: $(cut -d' ' -f1,4- "$out/device-33.txt" | head -1)"
echo "               $(cut -d' ' -f1,4- "$out/device-0-job.txt" | head -1)"
if ((failed)); then
  for f in "$out"/device-*.log "$out/proxy.log"; do echo "--- $f"; tail -n 5 "$f"; done
  grep -E 'event=(job_finished|privacy_ledger|stopped)|level=error' "$out/server-b.log" | cut -c1-400 || true
  echo "device client job: FAIL (logs in $out)"
  exit 1
fi
echo "device client job: OK"
