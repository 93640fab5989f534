#!/usr/bin/env bash
# FedWalk end to end (seed 000_e325fe6286b1aaed.txt): every node of a
# dataset becomes an SDK device with its own TLS connection (nodefl-emulate);
# nodefl-server runs binning -> clustering tree -> federated random walks ->
# SkipGram and writes the embeddings; the DeepWalk protocol scores them
# (server/tools/score_embeddings.py) when the dataset has labels.
#
# Usage: examples/fedwalk/run-fedwalk.sh [options]
#   --graph DIR        dataset in the shared TSV layout
#                      (default ../shared/datasets/karate)
#   --out DIR          outputs (default build/fedwalk/<dataset>-<mode>)
#   --mode M           strict (default) or paper
#   --server HOST:PORT use a running server instead of starting one (it must
#                      run --job fedwalk with credentials for every node; give
#                      --bundle too)
#   --bundle FILE      devices.bundle for --server
#   --no-build         use the binaries already in build/host
#   --no-install       skip the apt step
#   --no-score         do not score the embeddings
#   -- ARGS            anything after -- goes to nodefl-server (e.g.
#                      --fedwalk_walks_per_vertex 10 --fedwalk_p 0.3)
# Prints the server's job summaries (phases, walks issued/completed/lost,
# messages per walk vs Theorem 4.2, privacy ledger), the emulator's summary
# and the Micro/Macro-F1 table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/karate
out=
mode=strict
server=
bundle=
build=1
install=1
score=1
server_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --bundle) bundle=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-install) install=0; shift ;;
    --no-score) score=0; shift ;;
    --) shift; server_args=("$@"); break ;;
    -h|--help) sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run-fedwalk.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "run-fedwalk.sh: no edges.tsv in '$graph'" >&2; exit 2; }
[[ $mode == strict || $mode == paper ]] || { echo "run-fedwalk.sh: --mode is strict or paper" >&2; exit 2; }
if [[ -n $server && -z $bundle ]]; then echo "run-fedwalk.sh: --server needs --bundle" >&2; exit 2; fi
name=$(basename "$graph")
out=${out:-build/fedwalk/$name-$mode}

if [[ $install == 1 ]]; then bash toolchains/install-deps.sh host; fi
if [[ $build == 1 ]]; then
  echo "== building (build/host)"
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca
fi
bin=build/host/server
mkdir -p "$out"
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")
echo "== FedWalk on $name: $n devices, $mode mode, outputs in $out"

server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
if [[ -z $server ]]; then
  pki=$out/pki
  if [[ ! -f $pki/devices/devices.bundle ]]; then
    echo "== issuing credentials (nodefl-ca)"
    rm -rf "$pki"
    $bin/ca/nodefl-ca init --dir "$pki" >/dev/null
    $bin/ca/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null
    $bin/ca/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null
  fi
  bundle=$pki/devices/devices.bundle
  port=$((20000 + RANDOM % 20000))
  server=127.0.0.1:$port
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --max_devices $((n + 100)) --job fedwalk --fedwalk_mode "$mode" --exit_after_jobs 1 \
    --idle_timeout_ms 3600000 --heartbeat_interval_ms 600000 --job_round_deadline_ms 1800000 \
    --output_dir "$out" "${server_args[@]}" >/dev/null 2>"$out/server.log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$out/server.log" 2>/dev/null && break; sleep 0.1; done
  grep -q 'event=listening' "$out/server.log" || { echo "run-fedwalk.sh: the server did not start:" >&2; cat "$out/server.log" >&2; exit 1; }
fi

echo "== emulating $n devices (progress below)"
status=0
$bin/nodefl-emulate --graph "$graph" --bundle "$bundle" --server "$server" --job fedwalk --keep-tree \
  --threads 1 --timeout 7200 >"$out/emulator.txt" || status=$?
if [[ -n $server_pid ]]; then
  wait "$server_pid" || status=$?
  server_pid=
  echo
  echo "== server summary"
  grep -E 'event=(job_finished|privacy_ledger|job_traffic)' "$out/server.log" | sed 's/^ts=[^ ]* level=[a-z]* //'
fi
echo
echo "== devices"
cat "$out/emulator.txt"
if [[ $score == 1 && -f $graph/labels.tsv && -f $out/embeddings.w2v ]]; then
  echo
  echo "== DeepWalk protocol (one-vs-rest logistic regression, Micro/Macro-F1)"
  python3 server/tools/score_embeddings.py --embeddings "$out/embeddings.w2v" --labels "$graph/labels.tsv" \
    --ratios 0.1,0.5,0.9 --shuffles 5 || status=$?
fi
exit $status
