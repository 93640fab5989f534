#!/usr/bin/env bash
# Fetches and unpacks Debian (bookworm) source packages with `apt-get source`
# through a PRIVATE apt configuration: its own sources list (one deb-src line
# for deb.debian.org, signed by the Debian archive keyring), its own index
# and cache directories under DIR. The machine's apt configuration, indexes
# and package state are neither read for sources nor changed, and it works
# without root. Nothing is downloaded from anywhere but Debian's archive.
#
# Usage: toolchains/fetch-debian-source.sh [--dir DIR] PACKAGE[=VERSION]...
#   --dir DIR   where the apt state and the unpacked sources go
#               (default build/cortex-m/debian-src; never committed)
#   PACKAGE     a source package name, e.g. mbedtls; =VERSION pins a Debian
#               version (e.g. mbedtls=2.28.3-1). Without one, the version of
#               the host's installed binary package built from that source is
#               taken if there is one (so target and host run the same code),
#               else bookworm's.
#   -h, --help  this text
# Prints one line per package: NAME VERSION SOURCE_DIR (the unpacked tree).
# Cached: a package already unpacked at the wanted version is not fetched
# again, and the index is refreshed only when a package must be fetched.
# Needs apt-get and dpkg-source (Debian package dpkg-dev).
set -euo pipefail

prog=${0##*/}
say() { printf '[%s] %s\n' "$prog" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$prog" "$*" >&2; exit 1; }
usage() { sed -n '2,22s/^# \{0,1\}//p' "$0"; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$ROOT/build/cortex-m/debian-src
pkgs=()
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --dir) (($# >= 2)) || die "--dir needs a value"; dir=$2; shift ;;
    -*) usage >&2; die "unknown option '$1'" ;;
    *) pkgs+=("$1") ;;
  esac
  shift
done
((${#pkgs[@]})) || { usage >&2; die "no package given"; }
command -v apt-get >/dev/null || die "apt-get not found: this script needs Debian's apt"
command -v dpkg-source >/dev/null || die "dpkg-source not found: install dpkg-dev (toolchains/install-deps.sh cortex-m)"

readonly KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $KEYRING ]] || die "$KEYRING not found (Debian package debian-archive-keyring)"

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
state=$dir/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/etc/sources.list.d" \
         "$state/etc/preferences.d" "$state/etc/apt.conf.d"
# Only bookworm main: the host's libmbedtls-dev and libnanopb-dev come from
# there (a security update would need bookworm-security added here too).
printf 'deb-src [signed-by=%s] http://deb.debian.org/debian bookworm main\n' "$KEYRING" \
  >"$state/etc/sources.list"

# Every path apt would otherwise take from the machine points into $state.
# Sandbox user root: the private directories belong to whoever runs this,
# not to the _apt user apt drops to when run as root.
APT=(apt-get -q
     -o Dir::Etc::SourceList="$state/etc/sources.list"
     -o Dir::Etc::SourceParts="$state/etc/sources.list.d"
     -o Dir::Etc::Preferences="$state/etc/preferences"
     -o Dir::Etc::PreferencesParts="$state/etc/preferences.d"
     -o Dir::State::Lists="$state/lists"
     -o Dir::Cache="$state/cache"
     -o Dir::Cache::pkgcache="$state/cache/pkgcache.bin"
     -o Dir::Cache::srcpkgcache="$state/cache/srcpkgcache.bin"
     -o Acquire::Languages=none -o Acquire::IndexTargets::deb::Packages::DefaultEnabled=false
     -o Acquire::Retries=3 -o APT::Sandbox::User="$(id -un)")

# wanted_version NAME: the host's installed version of a binary package built
# from source NAME (empty if none). awk reads to the end: an early exit
# would kill dpkg-query with SIGPIPE, which pipefail turns into a failure.
wanted_version() {
  dpkg-query -W -f '${db:Status-Status} ${source:Package} ${source:Version}\n' 2>/dev/null \
    | awk -v s="$1" '$1 == "installed" && $2 == s && !v { v = $3 } END { print v }'
}

updated=0
for spec in "${pkgs[@]}"; do
  name=${spec%%=*}
  version=
  [[ $spec == *=* ]] && version=${spec#*=}
  [[ -n $version ]] || version=$(wanted_version "$name")
  stamp=$dir/$name.unpacked
  if [[ -f $stamp ]]; then
    read -r have_version have_dir <"$stamp"
    if [[ -d $have_dir && ( -z $version || $have_version == "$version" ) ]]; then
      say "$name $have_version: cached in $have_dir"
      printf '%s %s %s\n' "$name" "$have_version" "$have_dir"
      continue
    fi
  fi
  if ((!updated)); then
    say "apt-get update (private index in $state)"
    "${APT[@]}" update >&2 || die "apt-get update failed (network? deb.debian.org reachable?)"
    updated=1
  fi
  target=$name
  [[ -n $version ]] && target=$name=$version
  work=$dir/$name
  rm -rf "$work"
  mkdir -p "$work"
  say "apt-get source $target into $work"
  (cd "$work" && "${APT[@]}" source "$target" >&2) \
    || die "apt-get source $target failed (is that version still in bookworm? pin another with NAME=VERSION)"
  # dpkg-source names the tree <name>-<upstream version>.
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "$name-*" | head -n 1)
  [[ -n $src ]] || die "no unpacked source tree in $work"
  dsc=$(find "$work" -maxdepth 1 -name "${name}_*.dsc" | head -n 1)
  got=$(sed -n 's/^Version: *//p' "$dsc" | head -n 1)
  [[ -z $version || $got == "$version" ]] || die "$name: fetched $got, wanted $version"
  printf '%s %s\n' "$got" "$src" >"$stamp"
  printf '%s %s %s\n' "$name" "$got" "$src"
done
