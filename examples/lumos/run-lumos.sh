#!/usr/bin/env bash
# Lumos tree construction end to end: every node of a dataset becomes an SDK
# device with its own TLS connection (nodefl-emulate); nodefl-server runs the
# lumos-trees job: secure-compare (Lumos Alg. 1, the greedy initialisation by
# one secure two-party comparison of round(ln degree) per edge), then
# lumos-trim (drains to public thresholds until the maximum workload, the
# neighbours a device keeps, is the optimum; docs/lumos.md) or, with
# --method mcmc, lumos-mcmc (the paper's Alg. 2 and 3 with every workload
# comparison a secure two-party comparison; paper mode only). The plaintext
# reference (nodefl-lumos-trim-reference: greedy, the paper's MCMC, exact)
# says what the optimum is.
#
# Usage: examples/lumos/run-lumos.sh [options]
#   --graph DIR            dataset in the shared TSV layout
#                          (default ../shared/datasets/karate)
#   --out DIR              outputs (default build/lumos/<dataset>); one folder
#                          per mode, reference/ for the plaintext reference and
#                          workloads-cdf.png below it
#   --modes "M ..."        privacy modes to run, one full job each (default
#                          "strict paper"): strict keeps comparison results and
#                          kept lists on the devices; paper reports both and the
#                          server checks coverage (greedy-init.tsv,
#                          lumos-trees.tsv)
#   --method M             exact (default) or mcmc; mcmc runs paper mode only
#                          and costs about 3 s per iteration on karate here
#                          (docs/benchmarks.md): give --mcmc-iterations
#   --train                then train Lumos's tree GNN on the devices (the
#                          dataset needs features.tsv, and labels.tsv for node
#                          classification) and the centralized baseline beside it
#   --task T               node (default: node classification, accuracy) or link
#                          (link prediction, Lumos Sec. VI-C: edges split 80/5/15,
#                          server-drawn negative partners, ROC-AUC), with --train
#   --model M              gcn (default) or gat, with --train
#   --projection R         with --train: devices project their features onto R
#                          public random dimensions before encoding (default 0:
#                          none; smaller model and messages, see docs/lumos.md)
#   --epochs N             training epochs (default 100; Lumos trained 300)
#   --secure-sum           with --train: the training epochs sum the devices'
#                          gradients and metrics through secure aggregation (the
#                          server's lumos_secure_sum; the devices get room for 64
#                          mask peers), so that the server learns only their sums
#                          (docs/lumos.md, "Gradients through secure aggregation");
#                          give lumos_secure_clip and the rest after --
#   --noise-seed S         every device draws its noise (encodings, randomised
#                          response, dropout) from S and its id instead of
#                          entropy (nodefl-emulate --noise-seed): two runs with the
#                          same S (and -- --lumos_train_seed) train alike; for
#                          comparisons only, S replays every draw
#   --tree T               tree (default, Lumos Sec. V-A) or ego (w.o. VN)
#   --unlimited-budget     devices accept any release (experiments with a large
#                          lumos_epsilon; paper mode always needs it and gets it)
#   --mcmc-iterations N    MCMC iterations of the reference and, with --method
#                          mcmc, of the job (default as Lumos Sec. VI-A: 300
#                          for lastfm, 1000 otherwise)
#   --build-dir DIR        build and use binaries in DIR (default build/host)
#   --no-build             use the binaries already in the build folder
#   --no-install           skip the apt step
#   --no-plot              do not draw workloads-cdf.png (and, with --train,
#                          learning-curve.png)
#   -- ARGS                anything after -- goes to nodefl-server (e.g.
#                          --compare_mode extension --compare_max_sessions 8)
# Idle, round, session and step timeouts are raised: one emulator process
# does the work of every device, which real devices (one CPU each) never do.
# Prints per mode the greedy stage (sessions, aborts, bytes, seconds), the
# trimming stage (steps, drains, messages, sealed bytes, seconds), workloads
# after each stage, the devices' coverage check and whether the maximum
# workload reaches the reference's exact optimum; then one table of the modes
# beside the reference's greedy, MCMC and exact rows, and the CDF plot
# (python3-matplotlib; skipped with a note without it).
# Exit status: 0 when every job finished verified, the emulator printed
# VERIFIED and every mode's maximum workload equals the exact optimum (for
# --method mcmc: no edge uncovered; the paper's MCMC need not reach it);
# 1 otherwise; 2 for bad arguments.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

graph=../shared/datasets/karate
out=
modes=
method=exact
train=0
secure_sum=0
noise_seed=0
task=node
projection=0
unlimited=0
model=gcn
epochs=100
tree=tree
mcmc=
build=1
build_dir=build/host
install=1
plot=1
server_args=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
die() { echo "run-lumos.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --graph|--out|--modes|--mode|--method|--mcmc-iterations|--build-dir|--model|--epochs|--tree|--task|--projection|--noise-seed)
      [[ $# -ge 2 ]] || die "$1 needs a value (see --help)" ;;&
    --graph) graph=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --modes|--mode) modes=$2; shift 2 ;;
    --method) method=$2; shift 2 ;;
    --train) train=1; shift ;;
    --secure-sum) secure_sum=1; shift ;;
    --noise-seed) noise_seed=$2; shift 2 ;;
    --unlimited-budget) unlimited=1; shift ;;
    --model) model=$2; shift 2 ;;
    --task) task=$2; shift 2 ;;
    --projection) projection=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --tree) tree=$2; shift 2 ;;
    --mcmc-iterations) mcmc=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-install) install=0; shift ;;
    --no-plot) plot=0; shift ;;
    --) shift; server_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -d $graph ]] || die "no dataset folder '$graph' (--graph DIR: a folder with edges.tsv)"
[[ -f $graph/edges.tsv ]] || die "no edges.tsv in '$graph' (--graph DIR: a dataset in the shared TSV layout)"
[[ $method == exact || $method == mcmc ]] || die "--method is exact or mcmc, not '$method'"
[[ $model == gcn || $model == gat ]] || die "--model is gcn or gat, not '$model'"
[[ $task == node || $task == link ]] || die "--task is node or link, not '$task'"
[[ $projection =~ ^[0-9]+$ && $projection -le 65535 ]] || die "--projection must be 0 .. 65535, not '$projection'"
[[ $tree == tree || $tree == ego ]] || die "--tree is tree or ego, not '$tree'"
[[ $epochs =~ ^[0-9]+$ && $epochs -gt 0 ]] || die "--epochs must be a positive integer, not '$epochs'"
[[ $secure_sum == 0 || $train == 1 ]] || die "--secure-sum sums the training's gradients: it needs --train"
[[ $noise_seed =~ ^[0-9]+$ ]] || die "--noise-seed must be a whole number, not '$noise_seed'"
features=0
classes=0
if [[ $train == 1 ]]; then
  [[ -s $graph/features.tsv ]] ||
    die "--train needs node features: $graph has no features.tsv (train on a dataset with features, e.g. cora)"
  [[ $task == link || -s $graph/labels.tsv ]] ||
    die "--train needs labels for node classification: $graph has no labels.tsv (or use --task link)"
  features=$(awk -F'\t' '$2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$graph/features.tsv")
  [[ $task == link ]] || classes=$(awk -F'\t' '$2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$graph/labels.tsv")
fi
if [[ -z ${modes// /} ]]; then
  if [[ $method == mcmc ]]; then modes=paper; else modes="strict paper"; fi
fi
for mode in $modes; do
  [[ $mode == strict || $mode == paper ]] || die "modes are strict and paper, not '$mode'"
  [[ $method == exact || $mode == paper ]] || die "--method mcmc runs in paper mode only (the server learns every comparison result)"
done
name=$(basename "$graph")
if [[ -z $mcmc ]]; then
  # Lumos Sec. VI-A: 300 iterations for LastFM, 1,000 for Facebook.
  if [[ $name == lastfm ]]; then mcmc=300; else mcmc=1000; fi
fi
[[ $mcmc =~ ^[0-9]+$ && $mcmc -gt 0 ]] || die "--mcmc-iterations must be a positive integer, not '$mcmc'"
root=${out:-build/lumos/$name}
# Debian's interpreter: it sees python3-matplotlib (a python3 earlier on PATH
# may not).
python=/usr/bin/python3
[[ -x $python ]] || python=python3
# The devices run at least as many comparison sessions at once as the server
# allows each of them (nodefl-emulate --compare-sessions).
sessions=4
for ((i = 0; i < ${#server_args[@]}; i++)); do
  case ${server_args[i]} in
    --compare_max_sessions) sessions=${server_args[i + 1]:-4} ;;
    --compare_max_sessions=*) sessions=${server_args[i]#*=} ;;
  esac
done

if [[ $install == 1 ]]; then bash toolchains/install-deps.sh host; fi
if [[ $build == 1 ]]; then
  echo "== building ($build_dir)"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build_dir" -j "${NODEFL_JOBS:-2}" \
    --target nodefl-server nodefl-emulate nodefl-ca nodefl-lumos-trim-reference nodefl-lumos-central
fi
bin=$build_dir/bin
for tool in nodefl-server nodefl-emulate nodefl-ca nodefl-lumos-trim-reference nodefl-lumos-central; do
  [[ -x $bin/$tool ]] || { echo "run-lumos.sh: no $bin/$tool (build it: drop --no-build, or give --build-dir)" >&2; exit 1; }
done
mkdir -p "$root"
# Nodes: the largest id in any of the dataset's files, plus one (as the
# emulator counts them: a node may have a label and no edge).
n=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ { if ($1 + 0 > m) m = $1 + 0; if (FILENAME ~ /edges/ && $2 + 0 > m) m = $2 + 0 }
                 END { print m + 1 }' "$graph/edges.tsv" $(for f in labels features; do
                   [[ -f $graph/$f.tsv ]] && echo "$graph/$f.tsv"; done))
# One TLS connection per device: the server and the emulator each hold one
# socket per device. Raise the soft limit on open files to the hard one;
# past the hard one only root with CAP_SYS_RESOURCE can go (containers
# often drop it), so say so instead of failing half way.
need=$((n + 256))
if [[ $(ulimit -n) != unlimited && $(ulimit -n) -lt $need ]]; then
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  if [[ $(ulimit -n) != unlimited && $(ulimit -n) -lt $need ]]; then
    echo "run-lumos.sh: $n devices need about $need open files per process (one TLS connection each);" \
         "this shell allows $(ulimit -n) (hard limit $(ulimit -Hn)). Raise it (ulimit -Hn as root with" \
         "CAP_SYS_RESOURCE, or limits.conf) or run a smaller graph." >&2
    exit 2
  fi
fi

server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
pki=$root/pki
# Credentials are reused between runs on the same dataset, unless they were
# issued for another number of devices.
if [[ ! -f $pki/devices/devices.bundle || $(cat "$pki/devices.count" 2>/dev/null) != "$n" ]]; then
  echo "== issuing credentials for $n devices (nodefl-ca)"
  rm -rf "$pki"
  $bin/nodefl-ca init --dir "$pki" >/dev/null
  $bin/nodefl-ca server --dir "$pki" --out "$pki/server" --name localhost >/dev/null
  $bin/nodefl-ca devices --dir "$pki" --out "$pki/devices" --first-id 0 --count "$n" >/dev/null
  echo "$n" >"$pki/devices.count"
fi

# The plaintext reference: the exact optimum every mode must reach, and the
# greedy and paper-MCMC rows of the comparison.
ref=$root/reference
rm -rf "$ref"
mkdir -p "$ref"
echo
echo "== plaintext reference on $name (nodefl-lumos-trim-reference, $mcmc MCMC iterations; $ref)"
$bin/nodefl-lumos-trim-reference --graph "$graph" --mcmc-iterations "$mcmc" --skip-rounds \
  --output "$ref/workloads.tsv" >"$ref/reference.txt" 2>"$ref/reference.log" ||
  { echo "run-lumos.sh: the reference failed:" >&2; cat "$ref/reference.log" >&2; exit 1; }
grep -E '^(dataset|method|greedy|mcmc|exact|threshold) ' "$ref/reference.txt"
optimum=$(sed -n 's/^exact = ceil(max density) = \([0-9]*\)$/\1/p' "$ref/reference.txt")
edges=$(sed -n 's/^dataset .*, \([0-9]*\) edges$/\1/p' "$ref/reference.txt")
[[ -n $optimum ]] || { echo "run-lumos.sh: no 'exact = ...' line in $ref/reference.txt" >&2; exit 1; }
# method max_wl mean_wl comparisons moves iterations kept_twice seconds
refrow() { awk -v m="$1" -v c="$2" '$1 == m { print $c; exit }' "$ref/reference.txt"; }

# Per-vertex greedy workloads (column 2) of the job against the reference.
greedy_diffs() {
  awk -F'\t' 'FNR == 1 { next } NR == FNR { g[$1] = $2; next } { n++; if (!($1 in g) || g[$1] != $2) d++ }
              END { print d + 0 " " n + 0 }' "$ref/workloads.tsv" "$1"
}

status=0
table=()
row_format='%-22s %6s %5s %7s  %-22s %12s %8s  %s'
plot_tsv=
plot_mode=
train_table=()
for mode in $modes; do
  out=$root/$mode
  rm -rf "$out"
  mkdir -p "$out"
  log=$out/server.log
  train_server_args=()
  train_emulator_args=()
  if [[ $train == 1 ]]; then
    train_server_args=(--lumos_train "$task" --lumos_features "$features"
                       --lumos_model "$model" --lumos_epochs "$epochs" --lumos_tree "$tree"
                       --lumos_projection "$projection" --lumos_epoch_deadline_ms 1800000)
    [[ $task == node ]] && train_server_args+=(--lumos_classes "$classes")
    train_emulator_args=(--lumos-train)
    if [[ $secure_sum == 1 ]]; then
      train_server_args+=(--lumos_secure_sum true)
      train_emulator_args+=(--train-secagg-peers 64)
    fi
    # Paper mode releases raw features and labels: the devices must be told
    # to allow unbounded releases (their default budget refuses them).
    [[ $mode == paper || $unlimited == 1 ]] && train_emulator_args+=(--unlimited-budget)
  fi
  echo
  echo "== Lumos trees on $name: $n devices, $mode mode (outputs in $out)"
  started=$(date +%s.%N)
  listening=0
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    ss -Htln 2>/dev/null | awk '{ print $4 }' | grep -q ":$port\$" && continue
    $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
      --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
      --max_devices $((n + 100)) --job lumos-trees --lumos_privacy "$mode" --exit_after_jobs 1 \
      --idle_timeout_ms 3600000 --heartbeat_interval_ms 600000 --job_round_deadline_ms 1800000 \
      --compare_session_timeout_ms 3600000 --lumos_step_deadline_ms 1800000 \
      --lumos_method "$method" --lumos_mcmc_iterations "$mcmc" "${train_server_args[@]}" \
      --output_dir "$out" "${server_args[@]}" >/dev/null 2>"$log" &
    server_pid=$!
    for _ in $(seq 100); do
      grep -q 'event=listening' "$log" 2>/dev/null && break
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q 'event=listening' "$log"; then listening=1; break; fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    grep -q 'Address already in use' "$log" || break  # anything else will not go away on another port
  done
  [[ $listening == 1 ]] || { echo "run-lumos.sh: the server did not start:" >&2; cat "$log" >&2 2>/dev/null; exit 1; }
  run=0
  noise_args=()
  [[ $noise_seed != 0 ]] && noise_args=(--noise-seed "$noise_seed")
  $bin/nodefl-emulate --graph "$graph" --bundle "$pki/devices/devices.bundle" --server "127.0.0.1:$port" \
    --job lumos-trees --compare-sessions "$sessions" --threads "$(nproc)" --timeout 7200 "${train_emulator_args[@]}" \
    "${noise_args[@]}" >"$out/emulator.txt" || run=$?
  # An emulator that gave up leaves the server waiting for its job: stop it.
  [[ $run == 0 ]] || kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" || run=$?
  server_pid=
  wall=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

  field() { grep -E "event=job_finished .*kind=$1 " "$log" | grep -o " $2=[^ ]*" | head -1 | cut -d= -f2- | tr -d '"'; }
  emu() { grep -E '^lumos-trees:' "$out/emulator.txt" | grep -oE "$1 [0-9.]+" | head -1 | awk '{ print $NF }'; }
  sum() { awk -v s="$*" 'BEGIN { n = split(s, a, " "); for (i = 1; i <= n; i++) t += a[i]; printf "%.3f", t }'; }
  fmt() { [[ -n $1 ]] && printf '%.3f' "$1" || echo "-"; }
  stage=lumos-trim
  [[ $method == mcmc ]] && stage=lumos-mcmc
  for kind in secure-compare $stage; do
    if ! grep -qE "event=job_finished .*kind=$kind " "$log"; then
      echo "run-lumos.sh: the server log has no job_finished for $kind ($log)"
      run=1
    elif [[ $(field "$kind" verified) != true ]]; then
      echo "run-lumos.sh: $kind finished unverified: error=\"$(field "$kind" error)\" ($log)"
      run=1
    fi
  done
  sc_done=$(field secure-compare done); sc_aborted=$(field secure-compare aborted)
  sc_seconds=$(sum "$(field secure-compare seconds_requests) $(field secure-compare seconds_sessions) $(field secure-compare seconds_report)")
  tr_seconds=$(sum "$(field lumos-trim seconds_ready) $(field lumos-trim seconds_drains) $(field lumos-trim seconds_report)")
  echo "-- greedy, secure-compare ($(field secure-compare value), width $(field secure-compare width), OT $(field secure-compare mode)):" \
    "$(field secure-compare sessions) sessions, ${sc_done:--} done, ${sc_aborted:--} aborted," \
    "$(field secure-compare bytes) bytes in $(field secure-compare messages) messages, $sc_seconds s" \
    "(requests $(fmt "$(field secure-compare seconds_requests)") + sessions $(fmt "$(field secure-compare seconds_sessions)")" \
    "+ report $(fmt "$(field secure-compare seconds_report)"))"
  if [[ $method == exact ]]; then
    echo "-- trimming, lumos-trim: $(field lumos-trim steps) steps, $(field lumos-trim drains) drain(s)" \
      "(thresholds $(field lumos-trim thresholds)), $(field lumos-trim messages) messages," \
      "$(field lumos-trim sealed_bytes) sealed bytes, $(field lumos-trim secure_comparisons) secure comparisons," \
      "$tr_seconds s (drains $(fmt "$(field lumos-trim seconds_drains)"))"
  else
    stop=$(grep -E "event=job_finished .*kind=lumos-mcmc " "$log" | sed -n 's/.* stop_reason="\([^"]*\)".*/\1/p' | head -1)
    tr_seconds=$(sum "$(field lumos-mcmc seconds_keys) $(field lumos-mcmc seconds_iterations) $(field lumos-mcmc seconds_report)")
    echo "-- trimming, lumos-mcmc (Alg. 2/3): $(field lumos-mcmc iterations) of $(field lumos-mcmc iterations_asked)" \
      "iterations (accepted $(field lumos-mcmc accepted), rejected $(field lumos-mcmc rejected), skipped" \
      "$(field lumos-mcmc skipped); by f' - f: lower $(field lumos-mcmc accepted_lower), equal" \
      "$(field lumos-mcmc accepted_equal), higher $(field lumos-mcmc accepted_higher) accepted/asked)," \
      "$(field lumos-mcmc comparisons) secure comparisons ($(field lumos-mcmc sessions_aborted) aborted," \
      "$(field lumos-mcmc session_bytes) bytes), $(field lumos-mcmc messages) messages, $tr_seconds s" \
      "${stop:+; stopped: $stop}"
  fi
  if [[ $method == exact ]]; then g_max=$(field lumos-trim greedy_max_workload); else g_max=$(field lumos-mcmc greedy_max); fi
  g_mean=$(fmt "$(field $stage greedy_mean_workload)")
  t_max=$(field $stage max_workload); t_mean=$(fmt "$(field $stage mean_workload)")
  echo "-- workload: after greedy max ${g_max:--}, mean $g_mean (reference greedy: $(refrow greedy 2), $(refrow greedy 3));" \
    "after trimming max ${t_max:--}, mean $t_mean"
  wl=$out/lumos-workloads.tsv
  if [[ -f $wl ]]; then
    read -r gd gn < <(greedy_diffs "$wl")
    kept=$(awk -F'\t' 'NR > 1 { s += $3 } END { print s + 0 }' "$wl")
    echo "   $wl: greedy workloads equal the plaintext rule on $((gn - gd)) of $gn devices;" \
      "trimmed workloads sum to $kept (edges: $edges)"
    [[ -z $plot_tsv ]] && { plot_tsv=$wl; plot_mode=$mode; }
  else
    echo "   no $wl"
    run=1
  fi
  coverage="devices: $(emu edges) edges, $(emu uncovered) uncovered, $(emu 'kept by both ends') kept by both ends, max $(emu 'workload max')"
  if [[ $method == exact && $mode == paper ]]; then
    coverage+="; server (kept lists): $(field lumos-trim uncovered_edges) uncovered, $(field lumos-trim unverified_edges) unverified"
  elif [[ $method == mcmc ]]; then
    coverage+="; server (kept lists): $(field lumos-mcmc uncovered) uncovered, $(field lumos-mcmc unverified_edges) unverified"
  fi
  result=$(grep -E '^result:' "$out/emulator.txt" || true)
  if [[ $result == "result: VERIFIED"* ]]; then
    coverage+="; VERIFIED"
  else
    coverage+="; NOT VERIFIED (${result:-no result line; the emulator exited $run})"
    run=1
  fi
  echo "-- coverage: $coverage"
  reaches=no
  [[ -n $t_max && $t_max == "$optimum" ]] && reaches=yes
  if [[ $method == exact ]]; then
    echo "-- optimum: exact $optimum (reference, ceil of the maximum density); the server's optimum" \
      "$(field lumos-trim optimum), certified $(field lumos-trim certified); max workload ${t_max:--}:" \
      "reaches the optimum: $reaches"
    [[ $reaches == yes ]] || run=1
  else
    echo "-- optimum: exact $optimum (reference); the paper's MCMC reached max workload ${t_max:--}" \
      "(the plaintext reference's MCMC: $(refrow mcmc 2) after $mcmc iterations): reaches the optimum: $reaches"
  fi
  if [[ $train == 1 ]]; then
    if ! grep -qE "event=job_finished .*kind=lumos-train " "$log"; then
      echo "run-lumos.sh: the server log has no job_finished for lumos-train ($log)"
      run=1
    else
      [[ $(field lumos-train verified) == true ]] || { echo "run-lumos.sh: lumos-train unverified: error=\"$(field lumos-train error)\""; run=1; }
      if [[ $task == link ]]; then
        final_test=$(field lumos-train final_test_auc)
        metric="ROC-AUC validation $(fmt "$(field lumos-train final_validation_auc)"), test $(fmt "$final_test")"
      else
        final_test=$(field lumos-train final_test_accuracy)
        metric="accuracy train $(fmt "$(field lumos-train final_train_accuracy)"), validation"
        metric+=" $(fmt "$(field lumos-train final_validation_accuracy)"), test $(fmt "$final_test")"
      fi
      echo "-- training, lumos-train ($task, $model, $tree, $epochs epochs): $metric;" \
        "best validation $(fmt "$(field lumos-train best_validation)") at epoch $(field lumos-train best_epoch), test there" \
        "$(fmt "$(field lumos-train test_at_best)"); bytes per device per epoch down $(field lumos-train bytes_down_per_device_epoch)," \
        "up $(field lumos-train bytes_up_per_device_epoch); stragglers $(field lumos-train stragglers);" \
        "feature epsilon $(field lumos-train epsilon_budget) (all receivers: max $(fmt "$(field lumos-train epsilon_all_receivers)"));" \
        "$(fmt "$(field lumos-train seconds_epochs)") s of epochs (curve: $out/lumos-train-epochs.tsv)"
      run_name="lumos $model $tree, $mode"
      if [[ $secure_sum == 1 ]]; then
        run_name+=", secure sum"
        echo "-- secure sum: $(field lumos-train aggregations_done) aggregations done," \
          "$(field lumos-train aggregations_aborted) aborted (or refused); $(field lumos-train clipped) gradient values" \
          "clipped to +-$(field lumos-train secure_clip); sealed bytes per device per epoch to its mask peers" \
          "$(field lumos-train peer_bytes_per_device_epoch)"
        [[ $(field lumos-train aggregations_aborted) == 0 ]] || run=1
      fi
      train_table+=("$(printf '%-40s %9s %9s %9s %12s %10s' "$run_name" \
        "$(fmt "$final_test")" "$(fmt "$(field lumos-train test_at_best)")" \
        "$(field lumos-train bytes_down_per_device_epoch)" "$(field lumos-train bytes_up_per_device_epoch)" \
        "$(fmt "$(field lumos-train seconds_epochs)")")")
    fi
  fi
  echo "-- devices ($out/emulator.txt)"
  sed 's/^/   /' "$out/emulator.txt"
  echo "-- $mode mode: exit $run, wall $wall s"
  comparisons="${sc_done:--}"
  [[ ${sc_aborted:-0} != 0 ]] && comparisons+=" (+${sc_aborted} aborted)"
  [[ $method == mcmc ]] && comparisons+=" + $(field lumos-mcmc comparisons)"
  table+=("$(printf "$row_format" "job, $mode mode" "${g_max:--}" "${t_max:--}" "$t_mean" "$comparisons" \
    "$(field $stage messages) / $(field $stage "$([[ $method == exact ]] && echo steps || echo iterations)")" \
    "$(sum "$sc_seconds $tr_seconds")" "$reaches")")
  [[ $run == 0 ]] || status=1
done

echo
echo "== summary: $name, $n devices, $edges edges; exact optimum $optimum"
printf "$row_format\n" run "greedy" "max" "mean" "secure comparisons" "msgs / steps" seconds "reaches optimum"
for row in "${table[@]}"; do echo "$row"; done
for m in greedy mcmc exact; do
  label="reference, $m"
  start=$(refrow greedy 2)
  case $m in
    mcmc) label="reference, paper MCMC"; comparisons="$(refrow mcmc 4) ($(refrow mcmc 6) it.)" ;;
    exact) start="-"; comparisons=$(refrow exact 4) ;;
    *) comparisons=$(refrow greedy 4) ;;
  esac
  r_max=$(refrow $m 2)
  printf "$row_format\n" "$label" "$start" "$r_max" "$(refrow $m 3)" "$comparisons" "-" "$(refrow $m 8)" \
    "$([[ $r_max == "$optimum" ]] && echo yes || echo no)"
done
echo "(greedy: max workload after Lumos Alg. 1; max / mean: after trimming; secure comparisons: the jobs' completed"
echo " two-party sessions, the reference's rows what each method would need if every comparison were secure;"
echo " msgs / steps: the trimming stage's sealed messages and drain steps (MCMC: iterations); seconds: the jobs' stage times, the"
echo " reference's compute time. MCMC is the paper's Alg. 2 from greedy; strict mode keeps comparison results"
echo " and kept lists on the devices, paper mode reports them and the server checks coverage.)"

if [[ $train == 1 ]]; then
  # The centralized baseline: the same layer code, model, epochs and split
  # (the server's lumos_split_seed default, 1), on the whole graph.
  central=$root/central-$model.txt
  $bin/nodefl-lumos-central --graph "$graph" --task "$task" --model "$model" --epochs "$epochs" --every 0 \
    --output "$root/central-$model-epochs.tsv" >"$central" 2>"$root/central-$model.log" || {
    echo "run-lumos.sh: the centralized baseline failed:" >&2
    cat "$root/central-$model.log" >&2
    status=1
  }
  echo
  what="node classification, test accuracy"
  [[ $task == link ]] && what="link prediction, test ROC-AUC"
  [[ $projection != 0 ]] && what+=", features projected to $projection dimensions"
  echo "== training: $name, $what: at the last epoch, and at"
  echo "   the epoch of best validation; bytes per device per epoch ($model, $epochs epochs)"
  printf '%-40s %9s %9s %9s %12s %10s\n' run "test" "test@best" "bytes down" "bytes up" seconds
  for row in "${train_table[@]}"; do echo "$row"; done
  if [[ -s $central ]]; then
    if [[ $task == link ]]; then
      c_test=$(sed -n 's/.*last epoch validation AUC [0-9.]* test AUC \([0-9.]*\).*/\1/p' "$central")
      c_best=$(sed -n 's/.*best validation AUC [0-9.]* at epoch [0-9]*, test AUC \([0-9.]*\) there.*/\1/p' "$central")
    else
      c_test=$(sed -n 's/.*last epoch train [0-9.]* validation [0-9.]* test \([0-9.]*\).*/\1/p' "$central")
      c_best=$(sed -n 's/.*best validation [0-9.]* at epoch [0-9]*, test \([0-9.]*\) there.*/\1/p' "$central")
    fi
    c_secs=$(sed -n 's/.*; \([0-9.]*\) s$/\1/p' "$central")
    printf '%-40s %9s %9s %9s %12s %10s\n' "central $model (baseline)" "${c_test:--}" "${c_best:--}" - - "${c_secs:--}"
  fi
fi

if [[ $plot == 1 && $train == 1 ]]; then
  curve_args=()
  for mode in $modes; do
    [[ -s $root/$mode/lumos-train-epochs.tsv ]] && curve_args+=(--series "lumos $model, $mode=$root/$mode/lumos-train-epochs.tsv")
  done
  [[ -s $root/central-$model-epochs.tsv ]] && curve_args+=(--series "central $model=$root/central-$model-epochs.tsv")
  curve_rc=0
  $python server/tools/plot_learning_curve.py "${curve_args[@]}" \
    --title "$name, $model: $([[ $task == link ]] && echo ROC-AUC || echo accuracy) by epoch" \
    --output "$root/learning-curve.png" >/dev/null 2>"$root/curve.log" || curve_rc=$?
  case $curve_rc in
    0) echo "plot: $root/learning-curve.png" ;;
    3) echo "plot: learning curve skipped (python3-matplotlib not installed for $python)" ;;
    *) echo "plot: learning curve FAILED (exit $curve_rc):" >&2; cat "$root/curve.log" >&2; status=1 ;;
  esac
fi

if [[ $plot == 1 ]]; then
  png=$root/workloads-cdf.png
  if [[ -z $plot_tsv ]]; then
    echo "plot: skipped (no job wrote lumos-workloads.tsv)"
  else
    logx=()
    maxdeg=$(awk -F'\t' 'NF >= 2 && $1 !~ /^#/ && $1 != $2 { d[$1]++; d[$2]++ } END { for (v in d) if (d[v] > m) m = d[v]; print m + 0 }' "$graph/edges.tsv")
    [[ $maxdeg -ge 50 ]] && logx=(--logx)
    plot_rc=0
    $python server/tools/plot_workload_cdf.py --graph "$graph" \
      --series "greedy (job, $plot_mode)=$plot_tsv:greedy" --series "trimmed (job, $plot_mode)=$plot_tsv:workload" \
      --series "paper MCMC, $mcmc it. (reference)=$ref/workloads.tsv:mcmc" "${logx[@]}" \
      --title "$name: CDF of per-device workload" --output "$png" >/dev/null 2>"$root/plot.log" || plot_rc=$?
    case $plot_rc in
      0) echo "plot: $png" ;;
      3) echo "plot: skipped (python3-matplotlib not installed for $python; apt-get install python3-matplotlib)" ;;
      *) echo "plot: FAILED (exit $plot_rc):" >&2; cat "$root/plot.log" >&2; status=1 ;;
    esac
  fi
fi
exit $status
