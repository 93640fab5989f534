#!/usr/bin/env bash
# What one Lumos training epoch costs a device on 64-bit ARM, in
# instructions: nodefl-lumos-train-bench is cross-built for aarch64 and run
# under qemu-aarch64 with the per-thread instruction-count plugin
# (qemu-insn-plugin.sh). For each model, feature width and workload it runs
# the device's tree forward and backward R1 and R2 times and prints
# (count(R2) - count(R1)) / (R2 - R1): the instructions of one epoch's
# forward + backward pass, with process and set-up costs cancelled.
#
# Usage: tests/bench/lumos-train-insn-count.sh [--workloads "1 4 16 37"]
#          [--features "1433 4714"] [--models "gcn gat"] [--no-build]
# Work files in build/bench/qemu-insn/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

workloads="1 4 16 37"
features="1433 4714"
models="gcn gat"
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --workloads) workloads=$2; shift 2 ;;
    --features) features=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "lumos-train-insn-count.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
work=build/bench/qemu-insn
mkdir -p "$work"

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh arm64
  cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEFL_SDK_ONLY=ON \
    -DNODEFL_BUILD_TESTS=ON -DCMAKE_TOOLCHAIN_FILE="$PWD/toolchains/aarch64-linux-gnu.cmake" >/dev/null
  cmake --build build/aarch64 -j "${NODEFL_JOBS:-2}" --target nodefl-lumos-train-bench >/dev/null
fi
source tests/bench/qemu-insn-plugin.sh
plugin=$(build_insn_plugin "$work")
bench=$(find build/aarch64 -name nodefl-lumos-train-bench -type f | head -n 1)
[[ -n $bench ]] || { echo "lumos-train-insn-count.sh: no aarch64 nodefl-lumos-train-bench (drop --no-build)" >&2; exit 1; }
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}

count() {  # model features workload repeats -> instructions of the main thread
  local out
  out=$(qemu-aarch64 -plugin "$PWD/$plugin" -d plugin "$PWD/$bench" --pass "$1" --features "$2" --workload "$3" \
        --repeats "$4" 2>&1) || { echo "$out" >&2; return 1; }
  grep -q '^passes' <<<"$out" || { echo "$out" >&2; return 1; }
  awk '/insn-count thread 0:/ { print $4 }' <<<"$out"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(qemu-aarch64 --version | head -n 1)"
printf '%-5s %9s %9s | %18s\n' model features workload "insns/epoch (f+b)"
for m in $models; do
  for d in $features; do
    for wl in $workloads; do
      r1=1 r2=3
      a=$(count "$m" "$d" "$wl" "$r1")
      b=$(count "$m" "$d" "$wl" "$r2")
      printf '%-5s %9s %9s | %18.0f\n' "$m" "$d" "$wl" "$(awk -v a="$a" -v b="$b" -v n=$((r2 - r1)) 'BEGIN { print (b - a) / n }')"
    done
  done
done
