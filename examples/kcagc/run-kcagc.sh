#!/usr/bin/env bash
# kCAGC over TLS: L organisations (nodefl-emulate --job kcagc: devices
# 0..L-1, each holding the whole graph and its share of the feature columns,
# split as nodefl-kcagc-sim splits them) cluster a dataset with nodefl-server
# as the paper's P_L (--job kcagc): every sum of distances goes through
# secure aggregation (robust, or the paper's Protocol 4 with
# --secagg-mode paper), the server learns only sums, local clusterings and
# the clustering it computes (docs/kcagc.md; --mode joint, not the
# paper's, also reveals the spectral embedding of all nodes). The same run
# in one process (nodefl-kcagc-sim, same settings) must give the same
# clustering and the same number of secure sums; the script checks both.
#
# Usage: examples/kcagc/run-kcagc.sh [options]
#   --graph DIR            dataset in the shared TSV layout with features.tsv
#                          and labels.tsv (default ../shared/datasets/cora)
#   --participants "L ..." participants, one job each (default 2)
#   --mode M               basic (Protocol 2), kcagc (Protocol 3, default),
#                          tree (Protocol 3 at every internal node of a tree)
#                          or joint (not the paper's: the whitened space of all
#                          columns by subspace iteration through secure sums,
#                          clustered by the server; --local-clusters and
#                          --seeding do not apply)
#   --local-clusters K     k-hat: a number, or a multiple of k like 2k (default k)
#   --clusters K           k (default: the classes in labels.tsv)
#   --seeding S            joint (default) or local (Protocol 2 line 6)
#   --secagg-mode M        robust (default) or paper (kCAGC Protocol 4)
#   --seed S               column split, seeding and projection (default 1)
#   --out DIR              outputs (default build/kcagc/<dataset>); one folder
#                          per job below it (<mode>-L<L>)
#   --build-dir DIR        build and use binaries in DIR (default build/host)
#   --no-build             use the binaries already in the build folder
#   --no-install           skip the apt step
#   --no-sim               do not run nodefl-kcagc-sim beside the job
#   -- ARGS                anything after -- goes to nodefl-server (e.g.
#                          --kcagc_global_restarts 3); give nodefl-kcagc-sim's
#                          equivalent yourself if the comparison should hold
# Prints per job the server's summary (accuracy, NMI, macro-F1, secure sums
# beside our formula and the paper's, aggregation rounds, bytes, wall time)
# and the emulator's, the simulation's line and whether the two agree, then
# one table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/cora
participants="2"
mode=kcagc
local_clusters=k
clusters=
seeding=joint
secagg_mode=robust
seed=1
out=
build=1
build_dir=build/host
install=1
sim=1
server_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --participants) participants=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --local-clusters) local_clusters=$2; shift 2 ;;
    --clusters) clusters=$2; shift 2 ;;
    --seeding) seeding=$2; shift 2 ;;
    --secagg-mode) secagg_mode=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-install) install=0; shift ;;
    --no-sim) sim=0; shift ;;
    --) shift; server_args=("$@"); break ;;
    -h|--help) sed -n '2,40s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run-kcagc.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $graph/features.tsv ]] || { echo "run-kcagc.sh: no features.tsv in '$graph' (kCAGC clusters by features)" >&2; exit 2; }
[[ -f $graph/labels.tsv ]] || { echo "run-kcagc.sh: no labels.tsv in '$graph' (the scores need it)" >&2; exit 2; }
[[ $mode == basic || $mode == kcagc || $mode == tree || $mode == joint ]] || { echo "run-kcagc.sh: --mode is basic, kcagc, tree or joint, not '$mode'" >&2; exit 2; }
[[ $seeding == joint || $seeding == local ]] || { echo "run-kcagc.sh: --seeding is joint or local, not '$seeding'" >&2; exit 2; }
[[ $secagg_mode == robust || $secagg_mode == paper ]] || { echo "run-kcagc.sh: --secagg-mode is robust or paper, not '$secagg_mode'" >&2; exit 2; }
max_l=0
for l in $participants; do
  [[ $l =~ ^[0-9]+$ && $l -ge 2 ]] || { echo "run-kcagc.sh: --participants takes numbers >= 2, not '$l'" >&2; exit 2; }
  if (( l > max_l )); then max_l=$l; fi
done
name=$(basename "$graph")
root=${out:-build/kcagc/$name}

if [[ $install == 1 ]]; then bash toolchains/install-deps.sh host; fi
if [[ $build == 1 ]]; then
  echo "== building ($build_dir)"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build_dir" -j "${NODEFL_JOBS:-2}" --target nodefl-server nodefl-emulate nodefl-ca nodefl-kcagc-sim
fi
bin=$build_dir/bin
mkdir -p "$root"

server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
# Credentials for the most participants asked for; a job takes devices 0..L-1.
pki=$root/pki
issued=0
if [[ -d $pki/devices ]]; then issued=$(find "$pki/devices" -name 'device-*.crt' | wc -l); fi
if [[ ! -f $pki/devices/devices.bundle ]] || (( issued < max_l )); then
  echo "== issuing credentials for $max_l participants (nodefl-ca)"
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$max_l" >/dev/null
fi

# The settings both tools get.
server_settings=(--kcagc_mode "$mode" --kcagc_local_clusters "$local_clusters" --kcagc_seeding "$seeding"
                 --kcagc_secagg_mode "$secagg_mode" --kcagc_seed "$seed" --kcagc_labels "$graph/labels.tsv")
sim_settings=(--mode "$mode" --local-clusters "$local_clusters" --seeding "$seeding" --seed "$seed")
if [[ -n $clusters ]]; then
  server_settings+=(--kcagc_clusters "$clusters")
  sim_settings+=(--clusters "$clusters")
fi

field() { grep -o " $2=[^ ]*" <<<"$1" | head -1 | cut -d= -f2 | cut -c1-"${3:-12}"; }
status=0
table=()
for l in $participants; do
  job=$root/$mode-L$l
  rm -rf "$job"
  mkdir -p "$job"
  echo
  echo "== kCAGC ($mode) on $name: $l participants, secure aggregation $secagg_mode (outputs in $job)"
  # Port 0: the OS picks a free one, and the server logs it.
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port 0 \
    --max_devices $((max_l + 16)) --job kcagc --job_quorum "$l" --exit_after_jobs 1 \
    --idle_timeout_ms 600000 --job_round_deadline_ms 600000 \
    --output_dir "$job" "${server_settings[@]}" "${server_args[@]}" >/dev/null 2>"$job/server.log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'event=listening' "$job/server.log" 2>/dev/null && break; sleep 0.1; done
  port=$(grep 'event=listening' "$job/server.log" | grep -o ' port=[0-9]*' | cut -d= -f2 || true)
  [[ -n $port ]] || { echo "run-kcagc.sh: the server did not start:" >&2; cat "$job/server.log" >&2; exit 1; }
  run=0
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --job kcagc --participants "$l" --kcagc-seed "$seed" --threads "$(nproc)" --timeout 7200 \
    >"$job/emulator.txt" 2>"$job/emulator.log" || run=$?
  wait "$server_pid" || run=$?
  server_pid=
  summary=$(grep 'event=kcagc_summary' "$job/server.log" | sed 's/^ts=[^ ]* level=[a-z]* //' || true)
  echo "-- server"
  grep -E 'event=kcagc_(failed|evaluation|spectral)' "$job/server.log" | sed 's/^ts=[^ ]* level=[a-z]* //' || true
  echo "$summary"
  echo "-- participants"
  grep -E '^(kcagc:|summary:|result:)' "$job/emulator.txt" || cat "$job/emulator.txt"
  agree="-"
  sim_sums="-"
  if [[ $sim == 1 ]]; then
    echo "-- nodefl-kcagc-sim (the same settings, in one process)"
    $bin/nodefl-kcagc-sim --graph "$graph" --participants "$l" "${sim_settings[@]}" --quiet \
      --output "$job/sim-assignment.tsv" | tee "$job/sim.txt" || run=$?
    sim_sums=$(grep -o 'secure sums [0-9]*' "$job/sim.txt" | awk '{print $3}')
    if [[ -f $job/kcagc-assignment.tsv ]] && cmp -s "$job/sim-assignment.tsv" "$job/kcagc-assignment.tsv" &&
       [[ $sim_sums == "$(field "$summary" secure_sums)" ]]; then
      agree=same
      echo "agreement: the job's clustering and secure sums equal the simulation's"
    else
      agree=DIFFERENT
      echo "agreement: DIFFERENT from the simulation (see $job)"
      run=1
    fi
  fi
  up=$(( $(field "$summary" aggregation_bytes_up) + 0 + $(field "$summary" upload_bytes) + 0 ))
  # "-": no paper count (the joint mode), or no run.
  paper=$(field "$summary" paper_secure_sums 30)
  if [[ $paper =~ ^[0-9][0-9.e+-]*$ ]]; then paper=$(printf '%.4g' "$paper"); else paper=-; fi
  table+=("$(printf '%-6s %3s %-7s %8s %8s %8s %13s %13s %7s %12s %8s %-9s' "$mode" "$l" "$secagg_mode" \
    "$(field "$summary" accuracy 6)" "$(field "$summary" nmi 6)" "$(field "$summary" macro_f1 6)" \
    "$(field "$summary" secure_sums)" "$paper" \
    "$(field "$summary" rounds)" \
    "$up" \
    "$(field "$summary" wall_s 6)" "$agree")")
  [[ $run == 0 ]] || status=1
done

echo
echo "== summary: kCAGC on $name"
printf '%-6s %3s %-7s %8s %8s %8s %13s %13s %7s %12s %8s %-9s\n' mode L secagg accuracy NMI macro-F1 \
  "secure sums" "paper" rounds "bytes up" "wall s" "vs sim"
for row in "${table[@]}"; do echo "$row"; done
echo "(secure sums: summed scalars, the paper's unit; paper: its count for this mode (Sec. 3.4; the joint"
echo " mode is not the paper's: -); bytes up:"
echo " the participants' aggregation records and uploads (JobData payloads, before TLS); wall: the job"
echo " from its start (filters included) to the clustering; vs sim: nodefl-kcagc-sim's clustering and"
echo " secure sums with the same settings)"
exit $status
