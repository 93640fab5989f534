#!/usr/bin/env bash
# Secure aggregation over TLS (the secure-aggregate job): n emulated SDK
# devices, each on its own TLS connection (nodefl-emulate --devices n),
# sum synthetic vectors through nodefl-server's AggregationService; the
# server checks every sum against the devices' public inputs.
#
# Usage: tests/bench/secagg-tls-bench.sh [options]
#   --graph DIR     a dataset with at least max(sizes) nodes (only its node
#                   count matters; default ../shared/datasets/blogcatalog)
#   --sizes "N ..." device counts (default "100 1000 10000")
#   --graphs "G ..." mask graphs: sparse and/or full (default "sparse full";
#                   full is skipped above --full-max devices)
#   --full-max N    largest fleet run on the full graph (default 1000: at
#                   10,000 a device holds 9,999 peers' keys and shares,
#                   ~5 KB each in the emulator, 50 GB for the fleet)
#   --length L      words per vector (default 10000)
#   --drop F        also run each sparse case with a fraction F of devices
#                   cut off after masking (default 0.1; 0: no such run)
#   --no-build      use the binaries already in build/host
#
# Prints one line per run: devices, graph, dropouts, peers per device,
# wall time of the aggregation (keys to sum), the server's unmasking time,
# mean bytes a device sent and received (records to and from the server;
# peer messages go through the relay on top: 191 sealed bytes per peer),
# expansion over sending the vector in the clear, and the emulator's CPU
# per device (everything a device does, TLS included, all in one process).
# One process plays every device, so a step takes the sum of the devices'
# times (the full graph at 1,000 devices: 999,000 sealed peer messages,
# then 999 key agreements and mask streams per device); the step deadline
# is 3 hours.
# Outputs go to build/bench/secagg-<n>-<graph>[-drop]/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/blogcatalog
sizes="100 1000 10000"
graphs="sparse full"
full_max=1000
length=10000
drop=0.1
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --graphs) graphs=$2; shift 2 ;;
    --full-max) full_max=$2; shift 2 ;;
    --length) length=$2; shift 2 ;;
    --drop) drop=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,31s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "secagg-tls-bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "secagg-tls-bench.sh: no edges.tsv in '$graph'" >&2; exit 2; }
for g in $graphs; do
  [[ $g == sparse || $g == full ]] || { echo "secagg-tls-bench.sh: graphs are sparse and full, not '$g'" >&2; exit 2; }
done
[[ $length =~ ^[0-9]+$ && $length -ge 1 ]] || { echo "secagg-tls-bench.sh: --length must be a positive integer" >&2; exit 2; }

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca >/dev/null
fi
bin=build/host/bin
out=build/bench
mkdir -p "$out"
nodes=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")
for n in $sizes; do
  [[ $n =~ ^[0-9]+$ && $n -ge 2 && $n -le $nodes ]] ||
    { echo "secagg-tls-bench.sh: size $n is outside 2..$nodes (the graph's nodes)" >&2; exit 2; }
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "vectors of $length words; $(date -u +%Y-%m-%d)"

pki=$out/pki-$(basename "$graph")
if [[ ! -f $pki/devices/devices.bundle ]]; then
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null 2>&1
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null 2>&1
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$nodes" >/dev/null 2>&1
fi

printf '%7s %-6s %5s %6s %9s %10s %11s %9s %9s %10s  %s\n' devices graph drop peers "wall s" "unmask ms" \
  "up B/dev" "down B" expansion "CPU ms/dev" result
port=7900
status=0
run_case() {
  local n=$1 g=$2 d=$3
  port=$((port + 1))
  local dir=$out/secagg-$n-$g$([[ $d != 0 ]] && echo "-drop")
  rm -rf "$dir"
  mkdir -p "$dir"
  local log=$dir/server.log
  # Room on each device: the full graph's n - 1 peers, or the sparse
  # graph's 2 ceil(log2 n) with the service's top-up (at most ~4x).
  local room=$((n - 1))
  [[ $g == sparse ]] && room=256
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --job secure-aggregate --job_quorum "$n" --exit_after_jobs 1 \
    --secagg_length "$length" --secagg_graph "$g" --secagg_drop_fraction "$d" --secagg_drop_step uploads \
    --secagg_step_timeout_ms 10800000 --idle_timeout_ms 14400000 --heartbeat_interval_ms 600000 \
    --job_round_deadline_ms 14400000 --output_dir "$dir" >/dev/null 2>"$log" &
  local server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$log" 2>/dev/null && break; sleep 0.1; done
  local run=0
  /usr/bin/time -f '%U %S %M' -o "$dir/emulator.time" \
    $bin/nodefl-emulate --graph "$graph" --devices "$n" --bundle "$pki/devices/devices.bundle" \
    --server "127.0.0.1:$port" --job secure-aggregate --secagg-peers "$room" --secagg-length "$length" \
    --threads "$(nproc)" --timeout 7200 >"$dir/emulator.txt" 2>"$dir/emulator.log" || run=$?
  wait "$server_pid" || run=$?
  local line
  line=$(grep 'event=secagg_aggregation' "$log" | head -1)
  field() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2; }
  local peers
  peers=$(grep 'event=secagg_aggregation' "$log" | grep -o ' mean_peers=[^ ]*' | cut -d= -f2)
  local cpu
  cpu=$(awk -v n="$n" 'NF == 3 && $1 ~ /^[0-9.]+$/ { printf "%.1f", ($1 + $2) * 1000 / n }' "$dir/emulator.time")
  local up down
  up=$(field device_bytes_up_mean)
  down=$(field device_bytes_down_mean)
  local result=FAILED
  [[ $(field verified) == true ]] && result="sum verified"
  [[ $run == 0 && $result == "sum verified" ]] || status=1
  printf '%7s %-6s %5s %6s %9s %10s %11.0f %9.0f %9.3f %10s  %s\n' "$n" "$g" "$d" "${peers:--}" \
    "$(awk -v x="$(field wall_ms)" 'BEGIN { printf "%.1f", x / 1000 }')" "$(field unmask_ms)" "$up" "$down" \
    "$(awk -v u="$up" -v l="$length" 'BEGIN { printf "%.3f", u / (4 * l) }')" "$cpu" "$result"
}
for n in $sizes; do
  for g in $graphs; do
    if [[ $g == full && $n -gt $full_max ]]; then
      printf '%7s %-6s %5s %6s  %s\n' "$n" full - - "not run: above --full-max $full_max (memory, see --help)"
      continue
    fi
    run_case "$n" "$g" 0
    if [[ $g == sparse && $drop != 0 ]]; then run_case "$n" "$g" "$drop"; fi
  done
done
exit $status
