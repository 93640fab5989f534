#!/usr/bin/env bash
# Device-side instruction counts of secure comparisons on 64-bit ARM, as a
# phone-class proxy: nodefl-compare-bench is cross-built for aarch64 and run
# under qemu-aarch64 with a small TCG plugin (qemu_insn_per_thread.c) that
# counts guest instructions per thread; --threaded puts party A and party B
# on their own threads, so each party's count is read separately.
#
# The plugin is built against the plugin header of Debian's qemu source
# package (fetched with apt-get source --download-only from the Debian
# archive; the header must match the installed qemu-user's major version).
#
# Usage: tests/bench/compare-insn-count.sh [--widths "4 8 16 32"] [--batch N] [--no-build]
# Prints one line per width, OT mode and batch: instructions of party A and
# of party B per comparison. Work files in build/bench/qemu-insn/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

widths="4 8 16 32"
batch=1000
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --widths) widths=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "compare-insn-count.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
work=build/bench/qemu-insn
mkdir -p "$work"

if [[ $build == 1 ]]; then
  bash toolchains/install-deps.sh arm64
  cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEFL_SDK_ONLY=ON \
    -DNODEFL_BUILD_TESTS=ON -DCMAKE_TOOLCHAIN_FILE="$PWD/toolchains/aarch64-linux-gnu.cmake" >/dev/null
  cmake --build build/aarch64 -j "${NODEFL_JOBS:-2}" --target nodefl-compare-bench >/dev/null
fi

source tests/bench/qemu-insn-plugin.sh
plugin=$(build_insn_plugin "$work")

bench=build/aarch64/bin/nodefl-compare-bench
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(qemu-aarch64 --version | head -n 1)"
printf '%-9s %5s %6s | %16s %16s\n' mode width batch "A insns/cmp" "B insns/cmp"
status=0
for mode in base extension; do
  for w in $widths; do
    for n in 1 "$batch"; do
      # Base OTs cost the same per comparison in a batch: one batch size is enough.
      [[ $mode == base && $n != 1 ]] && continue
      args=(--threaded --widths "$w" --modes "$mode" --batch "$n")
      [[ $n == 1 ]] && args+=(--single)
      out=$(qemu-aarch64 -plugin "$PWD/$plugin" -d plugin "$PWD/$bench" "${args[@]}" 2>&1) || status=1
      grep -q 'correct' <<<"$out" || { echo "$out" >&2; status=1; continue; }
      a=$(awk '/insn-count thread 1:/ { print $4 }' <<<"$out")
      b=$(awk '/insn-count thread 2:/ { print $4 }' <<<"$out")
      printf '%-9s %5s %6s | %16.0f %16.0f\n' "$mode" "$w" "$n" "$(awk -v x="$a" -v n="$n" 'BEGIN { print x / n }')" \
        "$(awk -v x="$b" -v n="$n" 'BEGIN { print x / n }')"
    done
  done
done
exit $status
