#!/usr/bin/env bash
# The project's test command (README: `bash tests/run-all.sh`; CI runs it too).
#
# Stages, in order:
#   deps     toolchains/install-deps.sh host arm64 armhf (apt; quick no-op when
#            everything is installed)
#   host     build/host: Ninja, RelWithDebInfo without debug information
#            (-O2 -DNDEBUG: it costs a third of the build time, and the
#            test command debugs nothing), -DNODEFL_WERROR=ON; builds
#            everything and runs all tests with ctest
#   aarch64  build/aarch64: SDK + its unit tests cross-built with
#            toolchains/aarch64-linux-gnu.cmake (without debug information),
#            tests run under qemu-aarch64: a representative subset, the
#            exhaustive and statistical cases running once, on the host
#            (SLOW / HOST_ONLY in tests/cmake/nodefl_discover_tests.cmake)
#   armhf    build/armhf: same with toolchains/arm-linux-gnueabihf.cmake under
#            qemu-arm; if qemu-arm cannot run a test binary at all on this
#            machine the stage is reported as BUILT ONLY (not a failure)
#   asan     build/asan: the SDK and its unit tests with AddressSanitizer and
#            UndefinedBehaviorSanitizer (-O1, NODEFL_SANITIZE), every test
#            but the slow ones; any finding fails
#   tsan     build/tsan: the server's network layer with ThreadSanitizer: the
#            stream, relay and TLS transport tests and the fault-injection
#            tests (a server and 34 devices on threads over 127.0.0.1);
#            accepted races in tests/sanitizers/tsan.supp
# A failing stage does not stop the later ones; the script exits non-zero if
# any stage failed, after printing one summary line per stage (with its
# build and test times) and the ten slowest tests of the run.
#
# Options:
#   --host-only   skip the cross stages (and their packages)
#   --no-install  skip the deps stage (no apt)
#   --no-sanitize skip the asan and tsan stages
#   -h, --help    this text
# Environment:
#   NODEFL_JOBS          build and ctest parallelism (default 2)
#   NODEFL_TEST_TIMEOUT  per-test timeout in seconds for tests that set none
#                        (default 600)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

usage() { sed -n '2,37s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

host_only=0
install=1
sanitize=1
for arg in "$@"; do
  case $arg in
    -h|--help) usage; exit 0 ;;
    --host-only) host_only=1 ;;
    --no-install) install=0 ;;
    --no-sanitize) sanitize=0 ;;
    *) usage >&2; echo "run-all.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

JOBS=${NODEFL_JOBS:-2}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run-all.sh: NODEFL_JOBS must be a positive integer" >&2; exit 2; }
TEST_TIMEOUT=${NODEFL_TEST_TIMEOUT:-600}

# ---- bookkeeping ------------------------------------------------------------
summary=()
failed=0
t_start=$SECONDS

header() {
  printf '\n==============================================================================\n'
  printf '== %s\n' "$*"
  printf '==============================================================================\n'
}
note() { printf -- '--> %s\n' "$*"; }

# record NAME STATUS SECONDS DETAIL
record() {
  summary+=("$(printf '%-8s %-11s %5ss  %s' "$1" "$2" "$3" "$4")")
  [[ $2 == PASS || $2 == "BUILT ONLY" || $2 == SKIPPED ]] || failed=1
}

# The closing line of a ctest log, e.g. "100% tests passed, 0 tests failed out of 33".
ctest_result() { grep -E 'tests passed, [0-9]+ tests? failed out of' "$1" | tail -n 1 || true; }

# configure DIR ARGS...: (re)configure a Ninja build tree.
configure() {
  local dir=$1; shift
  # A tree made by another generator cannot be reused.
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    note "removing $dir (configured with another generator)"
    rm -rf "$dir"
  fi
  note "cmake -S . -B $dir $*"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEFL_BUILD_TESTS=ON \
        -DNODEFL_WERROR=ON "$@"
}

# build DIR [cmake --build options, e.g. --target T...]: sets build_s to the
# seconds it took.
build_s=0
build() {
  local t0=$SECONDS dir=$1
  shift
  note "cmake --build $dir -j $JOBS $*"
  cmake --build "$dir" -j "$JOBS" "$@" || return 1
  build_s=$((SECONDS - t0))
}

# run_ctest DIR [ctest options]: all tests (or those the options select),
# output of failures shown, log kept in DIR/ctest.log (and listed in
# ctest_logs, for the slowest tests at the end)
ctest_logs=()
run_ctest() {
  local dir=$1
  shift
  ctest_logs+=("$dir/ctest.log")
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"  # CTest keeps an old one when all pass
  note "ctest --test-dir $dir --output-on-failure -j $JOBS --timeout $TEST_TIMEOUT $*"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$TEST_TIMEOUT" "$@" 2>&1 \
    | tee "$dir/ctest.log"
}

# stage_begin NAME DIR TITLE: a host-package stage's header; false (the
# stage recorded as failed) when those packages are missing.
stage_begin() {
  header "$1: $3"
  if ((!deps_ok_host)); then
    record "$1" FAIL 0 "not run: host packages missing"
    return 1
  fi
  rm -f "$2/ctest.log"
}

# stage_result NAME T0 DIR OK [NOTE]: one summary line for a stage that
# configured, built and ran ctest in DIR (OK=1) or failed somewhere (OK=0).
stage_result() {
  local name=$1 t0=$2 dir=$3 ok=$4 extra=${5:-}
  if ((ok)); then
    record "$name" PASS $((SECONDS - t0)) "$(ctest_result "$dir/ctest.log") (${extra}build ${build_s}s)"
  else
    local r
    r=$(ctest_result "$dir/ctest.log" 2>/dev/null)
    record "$name" FAIL $((SECONDS - t0)) "${r:-configure, build or test run failed (see above)}${extra:+ (${extra%; })}"
  fi
}

# ---- stages ---------------------------------------------------------------
# stage_deps: install-deps.sh once per mode; deps_ok_<mode>=0 if that failed,
# and the stages needing those packages are then reported as failed, not run.
# shellcheck disable=SC2034  # read through ${!ok_var} in stage_cross
deps_ok_host=1 deps_ok_arm64=1 deps_ok_armhf=1
stage_deps() {
  local t0=$SECONDS modes=(host) ok=1
  ((host_only)) || modes+=(arm64 armhf)
  header "deps: toolchains/install-deps.sh ${modes[*]}"
  if ((!install)); then
    note "skipped (--no-install)"
    record deps SKIPPED 0 "--no-install"
    return
  fi
  # One call per mode, so that e.g. a broken armhf mirror does not keep the
  # host and aarch64 stages from running.
  local mode
  for mode in "${modes[@]}"; do
    if ! bash toolchains/install-deps.sh "$mode"; then
      ok=0
      printf -v "deps_ok_$mode" 0
    fi
  done
  if ((ok)); then
    record deps PASS $((SECONDS - t0)) "packages for: ${modes[*]}"
  else
    record deps FAIL $((SECONDS - t0)) "install-deps.sh failed (see above)"
  fi
}

# No debug information in the test command's builds: nobody debugs these
# binaries here, and it takes a third of the compile time. The host stage
# reconfigures build/host so: configure it again to debug there.
NO_DEBUG_INFO=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")

stage_host() {
  local t0=$SECONDS dir=build/host
  stage_begin host "$dir" "configure, build (-Werror) and run all tests in $dir" || return 0
  local ok=0
  configure "$dir" "${NO_DEBUG_INFO[@]}" && build "$dir" && run_ctest "$dir" && ok=1
  stage_result host "$t0" "$dir" "$ok"
}

# Sanitizer builds: -O1 (the sanitizers' own advice: fast enough, and the
# reports stay readable), no debug information.
SANITIZER_FLAGS=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG")

stage_asan() {
  local t0=$SECONDS dir=build/asan
  stage_begin asan "$dir" "the SDK and its unit tests with ASan + UBSan in $dir" || return 0
  # halt_on_error: the first finding fails the test; leaks are findings.
  # Not the slow and exhaustive (sweeps, statistical) cases: the host stage
  # runs them; here they would repeat the unit tests' code paths for minutes.
  local ok=0
  configure "$dir" -DNODEFL_SDK_ONLY=ON -DNODEFL_SANITIZE=address,undefined "${SANITIZER_FLAGS[@]}" \
    && build "$dir" \
    && ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
       run_ctest "$dir" -LE 'slow|exhaustive' \
    && ok=1
  stage_result asan "$t0" "$dir" "$ok"
}

# The tests that exercise the server's threads and strands: in-memory
# streams with failure injection, the relay room, and the TLS transport with
# a server and an emulated fleet on 127.0.0.1.
# With them, the echo, secure-compare and Lumos jobs with devices killed and
# revived (the fault tests: the server's strands, the job runner, worker
# threads and the emulator's second I/O thread at once). Not the FedWalk
# cases: ten times slower under TSan, their walks all pass the test's 5 s
# walk timeout. Races the design accepts are listed, with the reason, in
# tests/sanitizers/tsan.supp.
TSAN_TARGETS=(nodefl_stream_test nodefl_server_net_test nodefl_transport_integration_test
              nodefl_fault_injection_integration_test)
TSAN_TESTS='^(WakeLatchTest|TlsSocketStreamTest|ConnectionStreamTest|RelayRoomTest|TransportTest|NeighbourEchoKarateTest)\.|FaultInjectionTest.*/(echo|compare|lumos)_'

stage_tsan() {
  local t0=$SECONDS dir=build/tsan
  stage_begin tsan "$dir" "the server's network layer with ThreadSanitizer in $dir" || return 0
  local ok=0
  configure "$dir" -DNODEFL_SANITIZE=thread "${SANITIZER_FLAGS[@]}" \
    && build "$dir" --target "${TSAN_TARGETS[@]}" \
    && TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/sanitizers/tsan.supp" \
       run_ctest "$dir" -R "$TSAN_TESTS" \
    && ok=1
  stage_result tsan "$t0" "$dir" "$ok"
}

# stage_cross NAME DEBARCH TOOLCHAIN QEMU MUST_RUN
stage_cross() {
  local name=$1 debarch=$2 toolchain=$3 qemu=$4 must_run=$5
  local t0=$SECONDS dir=build/$name ok_var="deps_ok_$debarch"
  header "$name: cross-build the SDK + unit tests in $dir, run them under $qemu"
  if ((!${!ok_var})); then
    record "$name" FAIL 0 "not run: $debarch packages missing"
    return
  fi
  rm -f "$dir/ctest.log"
  if ! configure "$dir" -DNODEFL_SDK_ONLY=ON -DCMAKE_TOOLCHAIN_FILE="$ROOT/$toolchain" "${NO_DEBUG_INFO[@]}" \
     || ! build "$dir"; then
    record "$name" FAIL $((SECONDS - t0)) "configure/build failed"
    return
  fi
  # Check what got linked: target libraries only, never the build machine's.
  local triple foreign
  triple=$(basename "$toolchain" .cmake)
  foreign=$(grep -oE '/usr/lib/[a-z0-9_]+-linux-gnu[a-z]*/[^ ]+\.(so|a)' "$dir/build.ninja" \
            | grep -v "/usr/lib/$triple/" | sort -u || true)
  if [[ -n $foreign ]]; then
    printf '%s\n' "$foreign"
    record "$name" FAIL $((SECONDS - t0)) "links libraries of another architecture (above)"
    return
  fi
  note "linked target libraries: $(grep -oE "/usr/lib/$triple/[^ ]+\.(so|a)" "$dir/build.ninja" \
                                   | sort -u | xargs -r -n1 basename | tr '\n' ' ')"

  if ((!must_run)); then
    # Can this machine run the binaries at all? Try one test binary.
    local probe
    probe=$(find "$dir/tests" -type f -name '*_test' -perm -u+x 2>/dev/null | sort | head -n 1)
    if [[ -z $probe ]] || ! "$qemu" "$probe" --gtest_list_tests >/dev/null 2>&1; then
      printf '\n'
      printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
      printf '!!! %s: %s cannot run %s here: BUILT ONLY, TESTS NOT RUN\n' "$name" "$qemu" "${probe:-<no test binary>}"
      printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
      record "$name" "BUILT ONLY" $((SECONDS - t0)) "!!! tests NOT run: $qemu cannot execute them here"
      return
    fi
  fi
  local ok=0
  run_ctest "$dir" && ok=1
  stage_result "$name" "$t0" "$dir" "$ok" "under $qemu; "
}

# ---- main -----------------------------------------------------------------
scope="host + aarch64 + armhf"
((host_only)) && scope="host only"
header "nodefl tests in $ROOT ($scope; jobs: $JOBS)"
stage_deps
stage_host
if ((host_only)); then
  record aarch64 SKIPPED 0 "--host-only"
  record armhf SKIPPED 0 "--host-only"
else
  stage_cross aarch64 arm64 toolchains/aarch64-linux-gnu.cmake qemu-aarch64 1
  stage_cross armhf armhf toolchains/arm-linux-gnueabihf.cmake qemu-arm 0
fi
if ((sanitize)); then
  stage_asan
  stage_tsan
else
  record asan SKIPPED 0 "--no-sanitize"
  record tsan SKIPPED 0 "--no-sanitize"
fi

header "summary (total $((SECONDS - t_start))s)"
printf '%s\n' "${summary[@]}"
# The ten slowest tests of the run, from each stage's ctest log.
slowest=$(for log in "${ctest_logs[@]}"; do
            [[ -f $log ]] || continue
            stage=$(basename "$(dirname "$log")")
            sed -nE "s/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec\$/\2 $stage \1/p" "$log"
          done | sort -rn | awk 'NR <= 10')  # not head: sort would die of SIGPIPE under pipefail
if [[ -n $slowest ]]; then
  printf '\nslowest tests (seconds, stage, test):\n'
  printf '%s\n' "$slowest" | awk '{ printf "  %8.1f  %-8s %s\n", $1, $2, $3 }'
fi
if ((failed)); then
  # The failing tests again, at the end where a truncated CI log still
  # shows them: name and the last lines of their output (CTest's
  # LastTest.log holds every test's output between "Output:" and
  # "<end of output>").
  for log in "${ctest_logs[@]}"; do
    dir=$(dirname "$log")
    list=$dir/Testing/Temporary/LastTestsFailed.log
    [[ -s $list ]] || continue
    printf '\nfailed in %s:\n' "$(basename "$dir")"
    while IFS=: read -r _ name; do
      printf -- '--- %s (last 25 lines)\n' "$name"
      awk -v t="$name" '
        $0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); cur = $0; next }
        cur == t && /^Output:/ { on = 1; next }
        /^<end of output>/ { on = 0 }
        on' "$dir/Testing/Temporary/LastTest.log" | tail -n 25
    done < "$list"
  done
  printf '\nRESULT: FAILED\n'
  exit 1
fi
if printf '%s\n' "${summary[@]}" | grep -q 'BUILT ONLY'; then
  printf '\nRESULT: OK, BUT SOME CROSS TESTS WERE NOT RUN (see BUILT ONLY above)\n'
else
  printf '\nRESULT: OK\n'
fi
