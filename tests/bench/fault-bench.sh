#!/usr/bin/env bash
# Fault benchmark: one job on a graph with every node an emulated TLS device,
# run side by side without faults and with each fault plan given, and what
# each run accounted for (docs/reliability.md).
#
# Usage: tests/bench/fault-bench.sh [options]
#   --graph DIR     dataset in the shared TSV layout (default
#                   ../shared/datasets/blogcatalog)
#   --job JOB       neighbour-echo (default) or fedwalk (paper mode: tree,
#                   then device-to-device walks)
#   --faults "S …"  fault plans, one run each after a run without faults
#                   (default for neighbour-echo: "kill=0.1@echo
#                   kill=0.1@echo,revive=10s"; for fedwalk the same at
#                   phase walks + 2s)
#   --walks N       fedwalk: walks per vertex (default 2)
#   --deadline-ms D the server's round deadline (default 900000)
#   --devices N     only nodes 0..N-1 and the edges among them (default: all;
#                   the server starts the job once N devices are online)
#   --no-build      use the binaries already in build/host
#   -h, --help      this text
#
# Per run: the wall time, the server's accounting (echo: messages expected,
# received verified, devices that missed the send round; fedwalk: walk
# slots, completed, lost, lost by cause, re-issued) and the emulator's fault
# counts. Walk timeout 300 s (the stall window ends stuck walks well before).
# Everything it writes goes to build/bench/faults/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/blogcatalog
job=neighbour-echo
faults=
walks=2
deadline=900000
devices=0
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --job) job=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --walks) walks=$2; shift 2 ;;
    --deadline-ms) deadline=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,30s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "fault-bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "fault-bench.sh: no edges.tsv in '$graph'" >&2; exit 2; }
case $job in
  neighbour-echo) phase=echo ;;
  fedwalk) phase=walks ;;
  *) echo "fault-bench.sh: --job is neighbour-echo or fedwalk, not '$job'" >&2; exit 2 ;;
esac
# The echo job's send round lasts about a second: its kills go at once.
delay=
[[ $job == fedwalk ]] && delay=+2s
[[ -n $faults ]] || faults="kill=0.1@$phase$delay kill=0.1@$phase$delay,revive=10s"

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca >/dev/null
fi
bin=build/host/bin
name=$(basename "$graph")
out=build/bench/faults/$name
mkdir -p "$out"
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")
pki=$out/pki
if [[ ! -f $pki/devices/devices.bundle ]]; then
  echo "== issuing credentials for $n devices"
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null
fi

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
shown=$n
[[ $devices != 0 ]] && shown="$devices of $n"
echo "job $job on $name ($shown devices, TLS, server and emulator on this machine)"
server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
rows=()
i=0
for spec in none $faults; do
  i=$((i + 1))
  run=$out/run-$i
  rm -rf "$run"
  mkdir -p "$run"
  port=$((20000 + RANDOM % 20000))
  job_args=(--job "$job")
  emu_args=(--job "$job")
  if [[ $job == fedwalk ]]; then
    job_args+=(--fedwalk_mode paper --fedwalk_walks_per_vertex "$walks" --fedwalk_walk_timeout_ms 300000)
    emu_args+=(--fedwalk-mode paper --unlimited-budget)
  fi
  fault_args=()
  [[ $spec == none ]] || fault_args=(--faults "$spec")
  if [[ $devices != 0 ]]; then
    job_args+=(--job_quorum "$devices")
    emu_args+=(--devices "$devices")
  fi
  echo
  echo "== run $i: faults $spec"
  start=$SECONDS
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --exit_after_jobs 1 "${job_args[@]}" \
    --idle_timeout_ms 1800000 --heartbeat_interval_ms 600000 --job_round_deadline_ms "$deadline" \
    --output_dir "$run" >/dev/null 2>"$run/server.log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$run/server.log" 2>/dev/null && break; sleep 0.1; done
  status=0
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --threads "$(nproc)" --timeout 7200 "${emu_args[@]}" "${fault_args[@]}" >"$run/emulator.txt" \
    2>"$run/emulator.log" || status=$?
  wait "$server_pid" || true
  server_pid=
  wall=$((SECONDS - start))
  grep -E 'event=job_finished' "$run/server.log" | sed 's/^ts=[^ ]* level=[a-z]* //' | cut -c1-400
  grep -E '^faults:|^ +killed|^result:' "$run/emulator.txt" || true
  line=$(grep -E 'event=job_finished' "$run/server.log" | tail -1)
  get() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2; }
  killed=$(sed -n 's/^ *killed \([0-9]*\).*/\1/p' "$run/emulator.txt")
  revived=$(sed -n 's/.*revived \([0-9]*\),.*/\1/p' "$run/emulator.txt")
  if [[ $job == neighbour-echo ]]; then
    rows+=("$(printf '%-34s %6s %7s %8s %9s %10s %9s %7s %s' "$spec" "$wall" "${killed:-0}" "${revived:-0}" \
      "$(get expected_messages)" "$(get received_verified)" "$(get missed_round2)" "$(get verified)" \
      "emulator exit $status")")
  else
    rows+=("$(printf '%-34s %6s %7s %8s %6s %9s %5s %8s %8s %8s %8s %8s %7s' "$spec" "$wall" "${killed:-0}" \
      "${revived:-0}" "$(get walk_slots)" "$(get completed)" "$(get lost)" "$(get reissued)" \
      "$(get lost_offline)" "$(get lost_deadline)" "$(get lost_stalled)" "$(get lost_dropped)" "$(get verified)")")
  fi
done

echo
echo "== summary: $job on $name, $shown devices"
if [[ $job == neighbour-echo ]]; then
  printf '%-34s %6s %7s %8s %9s %10s %9s %7s\n' faults wall_s killed revived expected received missed verified
else
  printf '%-34s %6s %7s %8s %6s %9s %5s %8s %8s %8s %8s %8s %7s\n' faults wall_s killed revived slots completed \
    lost reissued offline deadline stalled dropped verified
fi
for row in "${rows[@]}"; do echo "$row"; done
echo "(killed, revived: devices; missed: devices that did not report the send round; lost by cause counts"
echo " every failed issue, re-issued ones included. Logs: $out/)"
