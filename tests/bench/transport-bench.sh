#!/usr/bin/env bash
# Transport benchmark: handshake rate, relay throughput and server memory per
# connected device, with N emulated TLS devices (default: 1000 and 10000),
# server and emulator side by side on this machine.
#
# Usage: tests/bench/transport-bench.sh [--sizes "1000 10000"] [--messages M]
#                                       [--payload BYTES] [--relay-bytes B] [--no-build]
#   --sizes      device counts to run (default "1000 10000")
#   --messages   sealed messages per directed edge in the throughput job (default 5)
#   --payload    plaintext bytes per message (default 1024)
#   --relay-bytes the server's relay_memory_bytes (default 4 GiB)
#   --no-build   use the binaries already in build/host
#
# Per size it generates a random graph (every device gets 8 random
# neighbour links, so mean degree ~16), issues credentials with nodefl-ca,
# starts nodefl-server (1 thread) and nodefl-emulate (1 thread) on loopback
# and runs the neighbour-echo job with the given load. Figures:
#   handshakes/s   devices / time until the last one finished its TLS handshake
#   relay msg/s    sealed messages / duration of the send round (server's view)
#   relay MB/s     sealed bytes (payload + 24) / the same duration
#   server KiB/dev (server RSS when all devices are registered and idle -
#                   server RSS before any connected) / devices
# The relay may hold 4 GiB here (the server's default is 1 GiB): every device
# sends as fast as its send window lets it, more than the emulator drains at
# that moment, and a full relay makes senders wait (docs/benchmarks.md).
# The idle timeout is raised because one emulator process does the crypto of
# thousands of devices: a device's heartbeat can wait minutes for its turn,
# which real devices (one CPU each) never do.
# Everything it writes goes to build/bench/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

sizes="1000 10000"
messages=5
payload=1024
relay_bytes=$((4 << 30))
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --messages) messages=$2; shift 2 ;;
    --payload) payload=$2; shift 2 ;;
    --relay-bytes) relay_bytes=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,29s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "transport-bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca >/dev/null
fi
bin=build/host/bin
out=build/bench
mkdir -p "$out"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load: neighbour-echo, $messages sealed messages per directed edge, $payload-byte payloads"
printf '\n%8s %8s %12s %12s %12s %12s %14s %10s\n' devices edges handshakes/s relay_msgs relay_msg/s relay_MB/s server_KiB/dev verified

port=7600
for n in $sizes; do
  graph=$out/graph-$n
  if [[ ! -f $graph/edges.tsv ]]; then
    mkdir -p "$graph"
    python3 - "$n" "$graph/edges.tsv" <<'PY'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(12345)
edges = set()
for u in range(n):
    for _ in range(8):
        v = rng.randrange(n)
        if v != u:
            edges.add((min(u, v), max(u, v)))
with open(path, "w") as f:
    for u, v in sorted(edges):
        f.write(f"{u}\t{v}\n")
PY
  fi
  pki=$out/pki-$n
  if [[ ! -f $pki/devices/devices.bundle ]]; then
    rm -rf "$pki"
    $bin/nodefl-ca init --dir "$pki" >/dev/null 2>&1
    $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null 2>&1
    $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null 2>&1
  fi
  port=$((port + 1))
  log=$out/server-$n.log
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --threads 1 --job neighbour-echo --exit_after_jobs 1 \
    --idle_timeout_ms 1800000 --heartbeat_interval_ms 600000 --relay_memory_bytes "$relay_bytes" \
    --job_messages_per_edge "$messages" --job_payload_bytes "$payload" \
    --job_round_deadline_ms 1800000 >/dev/null 2>"$log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$log" 2>/dev/null && break; sleep 0.1; done
  emu=$out/emulator-$n.txt
  status=0
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" \
    --server "127.0.0.1:$port" --messages-per-edge "$messages" --threads 1 --timeout 3600 \
    >"$emu" 2>"$out/emulator-$n.log" || status=$?
  wait "$server_pid" || status=$?

  edges=$(wc -l < "$graph/edges.tsv")
  rate=$(sed -n 's/.*(\([0-9.]*\) handshakes\/s).*/\1/p' "$emu")
  finished=$(grep 'event=job_finished' "$log")
  sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$finished")
  seconds=$(sed -n 's/.*seconds_send=\([0-9.e+-]*\).*/\1/p' <<<"$finished")
  verified=$(sed -n 's/.* verified=\([a-z]*\).*/\1/p' <<<"$finished")
  rss0=$(sed -n 's/.*event=listening.* rss_kib=\([0-9]*\).*/\1/p' "$log")
  rss1=$(sed -n 's/.*event=job_started.* rss_kib=\([0-9]*\).*/\1/p' "$log")
  python3 - "$n" "$edges" "$rate" "$sent" "$seconds" "$payload" "$rss0" "$rss1" "$verified" "$status" <<'PY'
import sys
n, edges, rate, sent, seconds, payload, rss0, rss1, verified, status = sys.argv[1:]
sent, seconds = int(sent or 0), float(seconds or 0)
msg_s = sent / seconds if seconds > 0 else 0
mb_s = sent * (int(payload) + 24) / seconds / 1e6 if seconds > 0 else 0
per_dev = (int(rss1 or 0) - int(rss0 or 0)) / int(n)
ok = verified if status == "0" else f"{verified}(exit {status})"
print(f"{n:>8} {edges:>8} {float(rate or 0):>12.0f} {sent:>12} {msg_s:>12.0f} {mb_s:>12.1f} {per_dev:>14.1f} {ok:>10}")
PY
done
echo
echo "logs and emulator summaries: $out/"
