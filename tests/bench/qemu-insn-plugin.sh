# Sourced by the *-insn-count.sh benchmarks: build_insn_plugin WORK_DIR
# builds (once) the TCG plugin that counts guest instructions per thread
# (qemu_insn_per_thread.c) and prints its path. Run from the repository root.
#
# The plugin is built against the plugin header of Debian's qemu source
# package, fetched with apt-get source --download-only through a private
# sources list (the header must match the installed qemu-user's version);
# its build needs libglib2.0-dev, dpkg-dev and xz-utils, installed if missing.
build_insn_plugin() {
  local work=$1
  local plugin=$work/libinsn_per_thread.so
  if [[ -f $plugin ]]; then
    echo "$plugin"
    return 0
  fi
  local missing=() p
  for p in libglib2.0-dev dpkg-dev xz-utils; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then apt-get install -y -q "${missing[@]}" >/dev/null; fi
  local header
  header=$(find "$work/src" -name qemu-plugin.h 2>/dev/null | head -n 1 || true)
  if [[ -z $header ]]; then
    echo "== fetching Debian's qemu source package for the plugin header" >&2
    mkdir -p "$work/apt/lists/partial" "$work/src"
    printf '%s\n' "deb-src http://deb.debian.org/debian bookworm main" \
      "deb-src http://deb.debian.org/debian-security bookworm-security main" >"$work/apt/sources.list"
    local apt_opts=(-o Dir::Etc::sourcelist="$PWD/$work/apt/sources.list" -o Dir::Etc::sourceparts=-
                    -o Dir::State::Lists="$PWD/$work/apt/lists")
    apt-get "${apt_opts[@]}" update >/dev/null
    local version
    version=$(dpkg-query -W -f='${source:Version}' qemu-user)
    (cd "$work/src" && { apt-get "${apt_opts[@]}" source --download-only "qemu=$version" >/dev/null 2>&1 ||
                         apt-get "${apt_opts[@]}" source --download-only qemu >/dev/null 2>&1; })
    local tarball top
    tarball=$(ls "$work"/src/qemu_*.orig.tar.* | head -n 1)
    top=$(tar -tf "$tarball" | sed -n "1s|/.*||p")
    tar -xf "$tarball" -C "$work/src" "$top/include/qemu/qemu-plugin.h"
    header=$work/src/$top/include/qemu/qemu-plugin.h
  fi
  # shellcheck disable=SC2046  # pkg-config prints several flags
  gcc -shared -fPIC -O2 -Wall -Wextra -I"$(dirname "$header")" $(pkg-config --cflags glib-2.0) \
    tests/bench/qemu_insn_per_thread.c -o "$plugin" >&2
  echo "$plugin"
}
