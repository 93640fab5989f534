#!/usr/bin/env bash
# FedWalk HCT end to end over TLS: nodefl-server runs the fedwalk-hct job
# (binning -> degree matrices -> dissimilarity, HCT, codebook -> publish)
# for every node of a dataset, each node an emulated SDK device with its own
# TLS connection (nodefl-emulate), server and emulator on this machine.
#
# Usage: tests/bench/fedwalk-hct-e2e.sh [--graph DIR] [--modes "strict paper"]
#                                       [--no-build]
#   --graph     dataset in the shared TSV layout
#               (default ../shared/datasets/blogcatalog)
#   --modes     privacy modes to run, one job each (default "strict")
#   --no-build  use the binaries already in build/host
#
# Prints per mode the server's job summary (phases, artefact sizes, the
# largest truncated codebook mass, the privacy ledger) and the emulator's
# summary. Outputs (tree, codebook, transcript, per-device table) go to
# build/bench/fedwalk-<dataset>-<mode>/. Idle timeouts are raised because
# one emulator process does the work of every device: a device can wait
# minutes for its turn, which real devices never do.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/blogcatalog
modes=strict
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "fedwalk-hct-e2e.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "fedwalk-hct-e2e.sh: no edges.tsv in '$graph'" >&2; exit 2; }

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca >/dev/null
fi
bin=build/host/bin
out=build/bench
mkdir -p "$out"
name=$(basename "$graph")
# Node ids are dense (0 .. max id); every id gets a device credential.
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "dataset: $name, $n devices"

pki=$out/pki-$name
if [[ ! -f $pki/devices/devices.bundle ]]; then
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null 2>&1
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null 2>&1
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null 2>&1
fi

port=7700
status=0
for mode in $modes; do
  port=$((port + 1))
  dir=$out/fedwalk-$name-$mode
  rm -rf "$dir"
  mkdir -p "$dir"
  log=$dir/server.log
  start=$(date +%s.%N)
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --threads 1 --job fedwalk-hct --fedwalk_mode "$mode" --exit_after_jobs 1 \
    --idle_timeout_ms 3600000 --heartbeat_interval_ms 600000 --job_round_deadline_ms 3600000 \
    --output_dir "$dir" >/dev/null 2>"$log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$log" 2>/dev/null && break; sleep 0.1; done
  run=0
  # Paper mode uploads exact matrices, which a device's default budget refuses.
  budget=()
  [[ $mode == paper ]] && budget=(--allow-unbounded-releases)
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --job fedwalk-hct --threads 1 --timeout 7200 "${budget[@]}" >"$dir/emulator.txt" 2>"$dir/emulator.log" || run=$?
  wait "$server_pid" || run=$?
  end=$(date +%s.%N)
  echo
  echo "== mode $mode: exit $run, wall $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
  grep -E 'event=(job_round|job_finished|privacy_ledger|job_traffic)' "$log" | sed 's/^ts=[^ ]* level=[a-z]* //'
  grep -E '^(fedwalk-hct|privacy ledger|summary|         |result)' "$dir/emulator.txt" || true
  [[ $run == 0 ]] || status=1
done
exit $status
