#!/usr/bin/env bash
# The SDK on bare-metal Cortex-M4F under QEMU (docs/porting.md, "Cortex-M
# (bare metal)"): builds MbedTLS and the nanopb runtime from Debian's source
# packages, the SDK with toolchains/arm-none-eabi-cortex-m4f.cmake, the
# board port for QEMU's mps2-an386 and the firmware images, then runs them
# under qemu-system-arm with semihosting:
#   nodefl-fw-tests           SDK unit tests of tests/sdk (core, privacy,
#                             wire codec, FedWalk HCT role, oblivious
#                             transfer) through the firmware's test harness;
#                             must exit 0
#   nodefl-fw-tests-must-fail a test that cannot pass; must exit non-zero
#                             (proves a failure reaches QEMU's exit code)
#   nodefl-fp-*               the footprint images; each must exit 0, and
#                             their figures are printed as a table
# Installs nothing: it checks for the tools and says what to install
# (toolchains/install-deps.sh cortex-m, as root). The sources are fetched
# once (apt-get source through a private sources list) and kept in the
# build directory; later runs rebuild only what changed.
#
# Usage: tests/cortex-m/run-firmware-tests.sh [options]
#   --build-dir DIR  default build/cortex-m
#   --timeout S      per QEMU run, seconds (default 240)
#   --no-footprint   skip the footprint images and table
#   --build-only     fetch, configure and build, run nothing (the test
#                    command builds this behind its host tests)
#   --no-build       run what an earlier --build-only built
#   -h, --help       this text
# Environment: NODEFL_JOBS build parallelism (default 2).
# Exit status: 0 all passed; 1 a build or a firmware run failed; 2 tools
# missing or bad arguments.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$(pwd)

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
note() { printf -- '--> %s\n' "$*"; }
die() { printf 'run-firmware-tests.sh: %s\n' "$*" >&2; exit "${2:-1}"; }

build=build/cortex-m
timeout_s=240
footprint=1
do_build=1
do_run=1
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --build-dir) (($# >= 2)) || die "--build-dir needs a value" 2; build=$2; shift ;;
    --timeout) (($# >= 2)) || die "--timeout needs a value" 2; timeout_s=$2; shift ;;
    --no-footprint) footprint=0 ;;
    --build-only) do_run=0 ;;
    --no-build) do_build=0 ;;
    *) usage >&2; die "unknown argument '$1'" 2 ;;
  esac
  shift
done
JOBS=${NODEFL_JOBS:-2}
t_start=$SECONDS

# ---- tools ---------------------------------------------------------------------
missing=()
for tool in arm-none-eabi-gcc arm-none-eabi-g++ arm-none-eabi-size arm-none-eabi-nm qemu-system-arm cmake ninja \
            python3 apt-get dpkg-source timeout; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
command -v nanopb_generator.py >/dev/null || command -v nanopb_generator >/dev/null || missing+=(nanopb_generator)
[[ -f /usr/lib/arm-none-eabi/newlib/thumb/v7e-m+fp/hard/libc_nano.a ]] || missing+=(newlib-nano)
if ((${#missing[@]})); then
  die "missing: ${missing[*]}
install them (Debian bookworm, as root): bash toolchains/install-deps.sh cortex-m" 2
fi
if ! qemu-system-arm -M help | grep -q '^mps2-an386 '; then
  die "this qemu-system-arm has no mps2-an386 machine (Debian bookworm's 7.2 has it)" 2
fi

((do_build || do_run)) || die "--build-only and --no-build together do nothing" 2
deps_s=0 build_s=0
if ((do_build)); then
# ---- target libraries from Debian's source packages ------------------------------
note "sources: toolchains/fetch-debian-source.sh --dir $build/debian-src mbedtls nanopb"
declare -A src
while read -r name version dir; do
  src[$name]=$dir
  note "  $name $version in $dir"
done < <(bash toolchains/fetch-debian-source.sh --dir "$build/debian-src" mbedtls nanopb)
[[ -n ${src[mbedtls]:-} && -n ${src[nanopb]:-} ]] || die "fetching the sources failed"

TOOLCHAIN=$ROOT/toolchains/arm-none-eabi-cortex-m4f.cmake
prefix=$ROOT/$build/prefix
t0=$SECONDS
note "MbedTLS + nanopb runtime for the target into $prefix"
cmake -S examples/cortex-m/deps -B "$build/deps" -G Ninja -DCMAKE_BUILD_TYPE=MinSizeRel \
      -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DMBEDTLS_SOURCE_DIR="${src[mbedtls]}" \
      -DNANOPB_SOURCE_DIR="${src[nanopb]}" -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null \
  || die "configuring examples/cortex-m/deps failed"
cmake --build "$build/deps" -j "$JOBS" | grep -vE '^\[[0-9]+/[0-9]+\] Building' || true
[[ ${PIPESTATUS[0]} == 0 ]] || die "building MbedTLS / nanopb failed"
cmake --install "$build/deps" >/dev/null || die "installing into $prefix failed"
deps_s=$((SECONDS - t0))

# ---- the SDK and the firmware -------------------------------------------------------
t0=$SECONDS
note "firmware: cmake -S examples/cortex-m -B $build/fw (toolchain $TOOLCHAIN)"
cmake -S examples/cortex-m -B "$build/fw" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
      -DNODEFL_TARGET_PREFIX="$prefix" >/dev/null || die "configuring examples/cortex-m failed"
set +e
cmake --build "$build/fw" -j "$JOBS" >"$build/fw-build.log" 2>&1
rc=$?
set -e
grep -E 'error|warning:|FAILED' "$build/fw-build.log" | grep -v -- '-Wformat' | head -n 40 || true
((rc == 0)) || { tail -n 30 "$build/fw-build.log"; die "building the firmware failed (log: $build/fw-build.log)"; }
build_s=$((SECONDS - t0))
fi
if ((!do_run)); then
  note "built in $((SECONDS - t_start))s (sources+deps ${deps_s}s, SDK+firmware ${build_s}s); not run (--build-only)"
  exit 0
fi
for image in nodefl-fw-tests nodefl-fw-tests-must-fail; do
  [[ -f $build/fw/$image.elf ]] || die "$build/fw/$image.elf is not built (run without --no-build)"
done

# ---- runs -----------------------------------------------------------------------------
# run_qemu ELF LOG: runs the image on mps2-an386 with its UART on LOG;
# returns the firmware's exit code (124: timed out).
run_qemu() {
  local rc=0
  timeout --kill-after=5 "$timeout_s" qemu-system-arm -M mps2-an386 -nographic -semihosting \
    -kernel "$1" </dev/null >"$2.raw" 2>&1 || rc=$?
  tr -d '\r' <"$2.raw" >"$2"
  rm -f "$2.raw"
  return "$rc"
}

failed=0
t0=$SECONDS
elf=$build/fw/nodefl-fw-tests.elf
note "qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel $elf"
rc=0
run_qemu "$elf" "$build/fw-tests.log" || rc=$?
grep -vE '^\[ RUN|^\[       OK' "$build/fw-tests.log" || true
note "firmware tests: exit $rc in $((SECONDS - t0))s (full output: $build/fw-tests.log)"
((rc == 0)) || { note "FAILED: the firmware tests exited $rc"; failed=1; }

elf=$build/fw/nodefl-fw-tests-must-fail.elf
rc=0
run_qemu "$elf" "$build/fw-must-fail.log" || rc=$?
if ((rc == 0 || rc == 124)); then
  note "FAILED: $elf exited $rc; a failing test must make QEMU exit non-zero"
  failed=1
else
  note "the deliberately failing image exited $rc, as it must"
fi

if ((footprint)); then
  : >"$build/footprint.log"
  for image in baseline session hct walk compare tls; do
    rc=0
    run_qemu "$build/fw/nodefl-fp-$image.elf" "$build/fp-$image.log" || rc=$?
    cat "$build/fp-$image.log" >>"$build/footprint.log"
    ((rc == 0)) || { cat "$build/fp-$image.log"; note "FAILED: footprint image $image exited $rc"; failed=1; }
  done
  note "footprint (bytes; arm-none-eabi-size and the linker maps of $build/fw, run-time marks under QEMU):"
  python3 tests/cortex-m/footprint-table.py "$build/fw" "$build/footprint.log" | tee "$build/footprint.md"
fi

note "times: sources+deps ${deps_s}s, SDK+firmware build ${build_s}s, total $((SECONDS - t_start))s"
if ((failed)); then
  printf 'RESULT: FAILED\n'
  exit 1
fi
printf 'RESULT: OK\n'
