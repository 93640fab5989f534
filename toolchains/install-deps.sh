#!/usr/bin/env bash
# Installs the Debian (bookworm) packages nodefl needs, from Debian's own
# package archive only. Idempotent: when everything is already installed it
# only runs dpkg-query and returns within a second, without root and without
# touching the network.
#
# Usage: toolchains/install-deps.sh [--check] [MODE...]
#   host    native toolchain + libraries for the SDK, server, examples, tests
#   arm64   cross toolchain g++-aarch64-linux-gnu, qemu-user and the target
#           libraries as Debian multiarch packages (libmbedtls-dev:arm64 ...)
#   armhf   the same for 32-bit ARM hard-float (g++-arm-linux-gnueabihf)
#   cortex-m bare-metal Cortex-M: gcc-arm-none-eabi with newlib(-nano) and
#           its libstdc++, qemu-system-arm (mps2-an386), and what
#           toolchains/fetch-debian-source.sh needs to fetch MbedTLS and
#           nanopb sources (tests/cortex-m/run-firmware-tests.sh)
#   all     host arm64 armhf cortex-m
#   --check only report what is missing; exit 1 if anything is
# Default mode: host. Installing needs root (no sudo is attempted).
#
# Modes are handled one after another, each with its own `apt-get update`
# only if it has something to install. Foreign architectures are enabled with
# `dpkg --add-architecture` as needed; Debian's mirrors serve every
# architecture, so no extra apt source is needed.
#
# `apt-get update` failures are reported but not fatal: a mirror can serve one
# stale index. (Seen on this project's machines: bookworm-security's
# binary-armhf/Packages.xz came back with the wrong size, "Mirror sync in
# progress?", so `apt-get update` exits 100 as soon as armhf is enabled, while
# every package we need is still available from the main bookworm index.) What
# matters is that each package we want has an install candidate, which is
# checked before installing; a package without one is a hard error.
set -euo pipefail

readonly HOST_PKGS=(
  build-essential g++ cmake ninja-build pkg-config python3
  libmbedtls-dev libgtest-dev libnanopb-dev nanopb libeigen3-dev libboost-dev libsqlite3-dev
  python3-sklearn python3-gensim
  openjdk-17-jdk-headless
)
# Target libraries are Multi-Arch: same, so they co-install with the amd64
# ones as long as the versions match (they come from the same archive).
# cmake/ninja/nanopb run on the build machine; listed so a cross-only set-up
# is complete.
readonly ARM64_PKGS=(
  cmake ninja-build nanopb g++-aarch64-linux-gnu qemu-user
  libc6:arm64 libstdc++6:arm64 libmbedtls-dev:arm64 libgtest-dev:arm64 libnanopb-dev:arm64
)
readonly ARMHF_PKGS=(
  cmake ninja-build nanopb g++-arm-linux-gnueabihf qemu-user
  libc6:armhf libstdc++6:armhf libmbedtls-dev:armhf libgtest-dev:armhf libnanopb-dev:armhf
)
# No target library packages: Debian ships none for arm-none-eabi, so
# MbedTLS and the nanopb runtime are built from Debian's source packages
# (apt-get source, which needs dpkg-dev to unpack and the archive keyring to
# verify; both are usually present already).
readonly CORTEX_M_PKGS=(
  cmake ninja-build nanopb python3 gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
  qemu-system-arm dpkg-dev debian-archive-keyring
)

prog=${0##*/}
say() { printf '[%s] %s\n' "$prog" "$*"; }
die() { printf '[%s] ERROR: %s\n' "$prog" "$*" >&2; exit 1; }

usage() { sed -n '2,18s/^# \{0,1\}//p' "$0"; }

check_only=0
modes=()
for arg in "$@"; do
  case $arg in
    -h|--help) usage; exit 0 ;;
    --check) check_only=1 ;;
    host|arm64|armhf|cortex-m) modes+=("$arg") ;;
    all) modes+=(host arm64 armhf cortex-m) ;;
    *) usage >&2; die "unknown argument '$arg'" ;;
  esac
done
((${#modes[@]})) || modes=(host)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  die "dpkg/apt not found: this script supports Debian (bookworm) only"
fi
NATIVE_ARCH=$(dpkg --print-architecture)
readonly NATIVE_ARCH

export DEBIAN_FRONTEND=noninteractive
# Wait for a concurrent apt/dpkg run instead of failing on its lock; no
# progress bars in logs.
readonly APT_OPTS=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -o Dpkg::Use-Pty=0)

mode_pkgs() {
  case $1 in
    host) printf '%s\n' "${HOST_PKGS[@]}" ;;
    arm64) printf '%s\n' "${ARM64_PKGS[@]}" ;;
    armhf) printf '%s\n' "${ARMHF_PKGS[@]}" ;;
    cortex-m) printf '%s\n' "${CORTEX_M_PKGS[@]}" ;;
  esac
}

# A bare name means the build machine's architecture (or Architecture: all):
# an unqualified query would also match e.g. libmbedtls-dev:arm64.
is_installed() {
  local names=("$1")
  [[ $1 == *:* ]] || names=("$1:$NATIVE_ARCH" "$1:all")
  local name
  for name in "${names[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$name" 2>/dev/null) == installed ]] && return 0
  done
  return 1
}

# apt-cache prints "Candidate: (none)" or nothing at all for unknown packages.
has_candidate() {
  local cand
  cand=$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
  [[ -n $cand && $cand != "(none)" ]]
}

update_failed=0
apt_update() {
  say "apt-get update"
  local log rc=0
  log=$(mktemp)
  apt-get "${APT_OPTS[@]}" -q update >"$log" 2>&1 || rc=$?
  if ((rc != 0)); then
    update_failed=1
    say "WARNING: apt-get update exited with $rc; continuing with the indexes apt has:"
    grep -E '^(E|W|Err):' "$log" | sed 's/^/    /' || cat "$log"
  fi
  rm -f "$log"
}

ensure_arch() {
  local arch=$1
  [[ $arch == "$NATIVE_ARCH" ]] && return 0
  dpkg --print-foreign-architectures | grep -qx "$arch" && return 0
  say "enabling foreign architecture $arch (dpkg --add-architecture $arch)"
  dpkg --add-architecture "$arch" || die "dpkg --add-architecture $arch failed"
}

missing_total=0
for mode in "${modes[@]}"; do
  missing=()
  while read -r pkg; do
    is_installed "$pkg" || missing+=("$pkg")
  done < <(mode_pkgs "$mode")

  if ((${#missing[@]} == 0)); then
    say "$mode: all packages present"
    continue
  fi
  missing_total=$((missing_total + ${#missing[@]}))
  say "$mode: missing: ${missing[*]}"
  ((check_only)) && continue

  ((EUID == 0)) || die "$mode: installing packages needs root; re-run as root: $0 ${modes[*]}"

  case $mode in
    arm64|armhf) ensure_arch "$mode" ;;
  esac
  # Always refresh: the indexes may be stale or lack a just-enabled architecture.
  apt_update

  no_candidate=()
  for pkg in "${missing[@]}"; do
    has_candidate "$pkg" || no_candidate+=("$pkg")
  done
  if ((${#no_candidate[@]})); then
    msg="$mode: no installable version of: ${no_candidate[*]}"
    ((update_failed)) && msg+=" (apt-get update reported errors above; check network and /etc/apt/sources.list.d)"
    die "$msg"
  fi

  say "$mode: apt-get install ${missing[*]}"
  if ! apt-get "${APT_OPTS[@]}" -q -y --no-install-recommends install "${missing[@]}"; then
    die "$mode: apt-get install failed (see apt's messages above). To reproduce:
    apt-get install --no-install-recommends ${missing[*]}"
  fi
  for pkg in "${missing[@]}"; do
    is_installed "$pkg" || die "$mode: $pkg is still not installed after apt-get install"
  done
  say "$mode: installed ${#missing[@]} package(s)"
done

if ((check_only && missing_total)); then
  exit 1
fi
exit 0
