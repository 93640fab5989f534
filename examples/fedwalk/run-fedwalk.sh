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
#   --out DIR          outputs (default build/fedwalk/<dataset>); one folder
#                      per mode below it
#   --modes "M ..."    privacy modes to run, one full job each (default
#                      "paper strict": the paper's mechanisms, then nodefl's
#                      strict default, compared at the end)
#   --server HOST:PORT use a running server instead of starting one (it must
#                      run --job fedwalk with credentials for every node; give
#                      --bundle too)
#   --bundle FILE      devices.bundle for --server
#   --no-build         use the binaries already in build/host
#   --no-install       skip the apt step
#   --no-score         do not score the embeddings
#   -- ARGS            anything after -- goes to nodefl-server (e.g.
#                      --fedwalk_walks_per_vertex 10 --fedwalk_p 0.3)
# Idle, round and walk timeouts are raised: one emulator process does the
# work of every device, so a walk can wait minutes for its next hop, which
# real devices (one CPU each) never do.
# Prints per mode the server's job summaries (phases, walks issued/completed/
# lost, messages per walk vs Theorem 4.2, privacy ledger), the emulator's
# summary and the Micro/Macro-F1 table, then one comparison table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/karate
out=
modes="paper strict"
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
    --modes|--mode) modes=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --bundle) bundle=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-install) install=0; shift ;;
    --no-score) score=0; shift ;;
    --) shift; server_args=("$@"); break ;;
    -h|--help) sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run-fedwalk.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/edges.tsv ]] || { echo "run-fedwalk.sh: no edges.tsv in '$graph'" >&2; exit 2; }
for mode in $modes; do
  [[ $mode == strict || $mode == paper ]] || { echo "run-fedwalk.sh: modes are strict and paper, not '$mode'" >&2; exit 2; }
done
if [[ -n $server && -z $bundle ]]; then echo "run-fedwalk.sh: --server needs --bundle" >&2; exit 2; fi
name=$(basename "$graph")
root=${out:-build/fedwalk/$name}
# Debian's interpreter: it sees python3-sklearn (a python3 earlier on PATH
# may not).
python=/usr/bin/python3
[[ -x $python ]] || python=python3

if [[ $install == 1 ]]; then bash toolchains/install-deps.sh host; fi
if [[ $build == 1 ]]; then
  echo "== building (build/host)"
  cmake -S . -B build/host -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/host -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca
fi
bin=build/host/server
mkdir -p "$root"
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 > m) m = $1; if ($2 > m) m = $2 } END { print m + 1 }' "$graph/edges.tsv")

server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
pki=$root/pki
if [[ -z $server && ! -f $pki/devices/devices.bundle ]]; then
  echo "== issuing credentials for $n devices (nodefl-ca)"
  rm -rf "$pki"
  $bin/ca/nodefl-ca init --dir "$pki" >/dev/null
  $bin/ca/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null
  $bin/ca/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null
fi

status=0
table=()
for mode in $modes; do
  out=$root/$mode
  rm -rf "$out"
  mkdir -p "$out"
  echo
  echo "== FedWalk on $name: $n devices, $mode mode (outputs in $out)"
  target=$server
  device_bundle=$bundle
  if [[ -z $server ]]; then
    device_bundle=$pki/devices/devices.bundle
    port=$((20000 + RANDOM % 20000))
    target=127.0.0.1:$port
    $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
      --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
      --max_devices $((n + 100)) --job fedwalk --fedwalk_mode "$mode" --exit_after_jobs 1 \
      --idle_timeout_ms 3600000 --heartbeat_interval_ms 600000 --job_round_deadline_ms 1800000 \
      --fedwalk_walk_timeout_ms 1800000 \
      --output_dir "$out" "${server_args[@]}" >/dev/null 2>"$out/server.log" &
    server_pid=$!
    for _ in $(seq 100); do grep -q 'event=listening' "$out/server.log" 2>/dev/null && break; sleep 0.1; done
    grep -q 'event=listening' "$out/server.log" ||
      { echo "run-fedwalk.sh: the server did not start:" >&2; cat "$out/server.log" >&2; exit 1; }
  fi
  run=0
  # Device-to-device walks cost, per edge, every later hop of every walk,
  # and paper mode uploads exact matrices: far past a device's default
  # budget (docs/privacy.md). The comparison runs them as published, with
  # devices that consent to it.
  $bin/nodefl-emulate --graph "$graph" --bundle "$device_bundle" --server "$target" --job fedwalk \
    --threads "$(nproc)" --timeout 7200 --unlimited-budget >"$out/emulator.txt" || run=$?
  if [[ -n $server_pid ]]; then
    wait "$server_pid" || run=$?
    server_pid=
    echo "-- server"
    grep -E 'event=(job_finished|privacy_ledger)' "$out/server.log" | sed 's/^ts=[^ ]* level=[a-z]* //'
  fi
  echo "-- devices"
  cat "$out/emulator.txt"
  f1="-"
  if [[ $score == 1 && -f $graph/labels.tsv && -f $out/embeddings.w2v ]]; then
    echo "-- DeepWalk protocol (one-vs-rest logistic regression)"
    $python server/tools/score_embeddings.py --embeddings "$out/embeddings.w2v" --labels "$graph/labels.tsv" \
      --ratios 0.1,0.5,0.9 --shuffles 5 --json "$out/scores.json" 2>/dev/null | tee "$out/scores.txt" || run=$?
    f1=$(awk '$1 == "0.50" { print $4 " / " $7 }' "$out/scores.txt")
  fi
  field() { grep -E "event=$1 .*kind=$2|event=$1 .*phase=$2" "$out/server.log" | grep -o " $3=[^ ]*" | head -1 | cut -d= -f2; }
  table+=("$(printf '%-7s %9s %9s %7s %11s %9s %14s %15s  %s' "$mode" \
    "$(field job_finished fedwalk-walks completed)" "$(field job_finished fedwalk-walks lost)" \
    "$(field job_finished fedwalk-walks messages_per_walk | cut -c1-6)" \
    "$(field job_finished fedwalk-walks theorem_4_2 | cut -c1-6)" \
    "$(field privacy_ledger fedwalk-walks epsilon_per_encoding | cut -c1-9)" \
    "$(field privacy_ledger fedwalk-walks device_epsilon_max | cut -c1-14)" \
    "$(field privacy_ledger fedwalk-hct device_epsilon_max | cut -c1-6)" "$f1")")
  [[ $run == 0 ]] || status=1
done

echo
echo "== summary: $name, $n devices (Micro / Macro-F1 at training ratio 0.5)"
printf '%-7s %9s %9s %7s %11s %9s %14s %15s  %s\n' mode completed lost msg/walk "Thm 4.2" eps/enc \
  "walk eps max" "tree eps max" "Micro / Macro-F1"
for row in "${table[@]}"; do echo "$row"; done
echo "(eps/enc: what one Eq. 12 encoding costs: 2*eps*du with the paper's raw score, eps when scaled;"
echo " walk eps max: the largest device total over its encodings; paper mode also publishes M_v unbounded)"
exit $status
