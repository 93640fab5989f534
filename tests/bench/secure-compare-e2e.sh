#!/usr/bin/env bash
# The secure-compare job (Lumos greedy initialisation by secure comparisons)
# end to end over TLS: every node of a dataset is an emulated SDK device
# with its own TLS connection (nodefl-emulate), nodefl-server runs the job,
# and the kept-neighbour lists it writes are checked against the plaintext
# rule (u keeps v iff round(ln deg v) >= round(ln deg u)).
#
# Usage: tests/bench/secure-compare-e2e.sh [--graph DIR] [--modes "base extension"]
#                                          [--width W] [--no-build]
#   --graph     dataset in the shared TSV layout (default ../shared/datasets/lastfm)
#   --modes     OT modes to run, one job each (default "base")
#   --width     bits per compared value (default 5)
#   --no-build  use the binaries already in build/host
#
# Prints per mode the wall time, the server's job summary (sessions,
# aborts, bytes, messages, per-round times), the emulator's summary and
# whether the result equals the plaintext computation. Outputs go to
# build/bench/secure-compare-<dataset>-<mode>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/lastfm
modes=base
width=5
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "secure-compare-e2e.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "secure-compare-e2e.sh: no edges.tsv in '$graph'" >&2; exit 2; }
for mode in $modes; do
  [[ $mode == base || $mode == extension ]] || { echo "secure-compare-e2e.sh: modes are base and extension, not '$mode'" >&2; exit 2; }
done

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh host
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca >/dev/null
fi
bin=build/host/bin
out=build/bench
mkdir -p "$out"
name=$(basename "$graph")
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "dataset: $name, $n devices; width $width"

pki=$out/pki-$name
if [[ ! -f $pki/devices/devices.bundle ]]; then
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null 2>&1
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null 2>&1
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null 2>&1
fi

# The plaintext rule, from the edge list alone.
expected=$out/secure-compare-$name-plaintext.tsv
/usr/bin/python3 - "$graph/edges.tsv" "$n" >"$expected" <<'PY'
import math, sys
edges, n = set(), int(sys.argv[2])
for line in open(sys.argv[1]):
    f = line.split("\t")
    if len(f) < 2 or line.startswith("#") or f[0] == f[1].strip():
        continue
    u, v = int(f[0]), int(f[1])
    edges.add((min(u, v), max(u, v)))
deg = [0] * n
for u, v in edges:
    deg[u] += 1
    deg[v] += 1
lg = [0 if d <= 1 else int(math.floor(math.log(d) + 0.5)) for d in deg]
kept = [[] for _ in range(n)]
for u, v in edges:
    if lg[v] >= lg[u]:
        kept[u].append(v)
    if lg[u] >= lg[v]:
        kept[v].append(u)
for x in range(n):
    print(f"{x}\t{','.join(map(str, sorted(kept[x])))}")
PY

port=7800
status=0
for mode in $modes; do
  port=$((port + 1))
  dir=$out/secure-compare-$name-$mode
  rm -rf "$dir"
  mkdir -p "$dir"
  log=$dir/server.log
  start=$(date +%s.%N)
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --job secure-compare --compare_mode "$mode" --compare_width "$width" \
    --exit_after_jobs 1 --idle_timeout_ms 3600000 --heartbeat_interval_ms 600000 \
    --job_round_deadline_ms 3600000 --compare_session_timeout_ms 3600000 \
    --output_dir "$dir" >/dev/null 2>"$log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$log" 2>/dev/null && break; sleep 0.1; done
  run=0
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --job secure-compare --threads "$(nproc)" --timeout 7200 >"$dir/emulator.txt" 2>"$dir/emulator.log" || run=$?
  wait "$server_pid" || run=$?
  end=$(date +%s.%N)
  echo
  echo "== OT mode $mode: exit $run, wall $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
  grep -E 'event=(job_round|job_finished|privacy_ledger)' "$log" | sed 's/^ts=[^ ]* level=[a-z]* //'
  grep -E '^(secure-compare|pair keys|summary|         |result)' "$dir/emulator.txt" || true
  if [[ -f $dir/greedy-init.tsv ]] && diff -q <(grep -v '^#' "$dir/greedy-init.tsv") "$expected" >/dev/null; then
    echo "greedy initialisation: equals the plaintext rule for all $n devices"
  else
    echo "greedy initialisation: DIFFERS from the plaintext rule (see $dir/greedy-init.tsv vs $expected)"
    run=1
  fi
  [[ $run == 0 ]] || status=1
done
exit $status
