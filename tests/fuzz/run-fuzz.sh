#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (build/fuzz: Clang 14, ASan +
# UBSan, -DNODEFL_FUZZ=ON) and runs each from its seed corpus
# (tests/fuzz/corpus/<target>/, copied to build/fuzz/corpus/<target>/ so the
# repository's seeds stay as they are).
#
# Usage: tests/fuzz/run-fuzz.sh [options]
#   --runs N        executions per target (default 10000000)
#   --seconds S     or stop each target after S seconds (whichever first)
#   --targets "T …" only these (default: every tests/fuzz/fuzz_*.cc)
#   --no-build      use the binaries already in build/fuzz
#   -h, --help      this text
#
# Prints one line per target: executions, seconds, executions per second,
# corpus files at the end, and the result. A crash, leak, sanitizer report
# or timeout leaves its input in build/fuzz/crashes/<target>/ and makes the
# script exit 1; each such input belongs in tests/fuzz/corpus/<target>/ (a
# regression seed) once fixed. Needs clang-14 and libclang-rt-14-dev
# (installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

runs=10000000
seconds=0
targets=""
build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run-fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 ]] || { echo "run-fuzz.sh: --runs must be a positive integer" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ ]] || { echo "run-fuzz.sh: --seconds must be a whole number" >&2; exit 2; }
if [[ -z $targets ]]; then
  targets=$(find tests/fuzz -maxdepth 1 -name 'fuzz_*.cc' -printf '%f\n' | sed 's/\.cc$//' | sort | tr '\n' ' ')
fi

if ((build)); then
  if ! command -v clang++-14 >/dev/null || [[ ! -d /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux ]]; then
    if [[ $(id -u) -eq 0 ]]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null
    else
      echo "run-fuzz.sh: needs clang-14 and libclang-rt-14-dev (apt-get install them as root)" >&2
      exit 2
    fi
  fi
  CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNODEFL_BUILD_TESTS=OFF -DNODEFL_FUZZ=ON >/dev/null
  # shellcheck disable=SC2086
  cmake --build build/fuzz -j "$(nproc)" --target $targets
fi

printf 'machine: %s cores, %s, %s\n' "$(nproc)" \
  "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)" \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
printf 'runs per target: %s%s; %s\n' "$runs" "$( ((seconds)) && printf ', at most %s s each' "$seconds")" "$(date -u +%F)"
printf '%-20s %12s %9s %10s %8s  %s\n' target executions seconds "exec/s" corpus result
status=0
for t in $targets; do
  bin=build/fuzz/tests/fuzz/$t
  [[ -x $bin ]] || { echo "run-fuzz.sh: $bin is not built" >&2; exit 2; }
  corpus=build/fuzz/corpus/$t
  crashes=build/fuzz/crashes/$t
  mkdir -p "$corpus" "$crashes"
  [[ -d tests/fuzz/corpus/$t ]] && cp -n tests/fuzz/corpus/$t/* "$corpus"/ 2>/dev/null || true
  args=(-runs="$runs" -print_final_stats=1 -artifact_prefix="$crashes/" -timeout=10 -rss_limit_mb=2048)
  ((seconds)) && args+=(-max_total_time="$seconds")
  log=build/fuzz/$t.log
  start=$SECONDS
  rc=0
  "$bin" "${args[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  elapsed=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  result="no crash"
  if ((rc != 0)); then
    result="FAILED (exit $rc; see $log, input in $crashes/)"
    status=1
  fi
  printf '%-20s %12s %9s %10s %8s  %s\n' "$t" "${execs:-?}" "$elapsed" \
    "$(awk -v e="${execs:-0}" -v s="$elapsed" 'BEGIN { printf "%.0f", (s > 0 ? e / s : e) }')" \
    "$(find "$corpus" -type f | wc -l)" "$result"
done
exit "$status"
