# Shared part of the Debian cross toolchain files (aarch64-linux-gnu.cmake,
# arm-linux-gnueabihf.cmake). Not meant to be passed to CMake directly: the
# per-target file sets these variables and then include()s this one:
#
#   NODEFL_CROSS_TRIPLE    Debian multiarch triplet, e.g. aarch64-linux-gnu
#   NODEFL_CROSS_PROCESSOR value for CMAKE_SYSTEM_PROCESSOR
#   NODEFL_CROSS_QEMU      qemu-user binary name, e.g. qemu-aarch64
#
# How target libraries are found
# ------------------------------
# Debian's cross compilers (g++-<triple>) are built with --with-sysroot=/ and
# --enable-multiarch: they already search /usr/lib/<triple> for libraries and
# /usr/include (last) for headers. Target libraries come from Debian multiarch
# packages (libmbedtls-dev:arm64, libgtest-dev:arm64, ...), which install into
# /usr/lib/<triple>/ and share the architecture-independent /usr/include.
# So there is no separate sysroot: CMAKE_LIBRARY_ARCHITECTURE=<triple> makes
# find_library() look in /usr/lib/<triple> and find_package() in
# /usr/lib/<triple>/cmake (GTest's config lives there). Every other multiarch
# directory (the build machine's /usr/lib/x86_64-linux-gnu, and the other ARM
# flavour's) is put on CMAKE_SYSTEM_IGNORE_PATH so a host library can never be
# picked up by mistake, even if the target package is missing: in that case
# configuration fails instead.
#
# Running target binaries
# -----------------------
# CMAKE_CROSSCOMPILING_EMULATOR is qemu-user (Debian package qemu-user). CTest
# and gtest_discover_tests() prefix target executables with it. With
# libc6:<arch> installed, the target's dynamic loader sits where the binaries
# expect it (/lib/ld-linux-aarch64.so.1, /lib/ld-linux-armhf.so.3) and the
# shared libraries are in /usr/lib/<triple>, so qemu needs no -L. Without
# libc6:<arch> we fall back to `-L /usr/<triple>` (the cross compiler's own
# libc), which is enough only for binaries that need nothing else.
# Override by passing -DCMAKE_CROSSCOMPILING_EMULATOR=... on the command line.

if(NOT NODEFL_CROSS_TRIPLE OR NOT NODEFL_CROSS_PROCESSOR OR NOT NODEFL_CROSS_QEMU)
  message(FATAL_ERROR "debian-multiarch.cmake: include it from a per-target toolchain file")
endif()

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${NODEFL_CROSS_PROCESSOR})

set(CMAKE_C_COMPILER ${NODEFL_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${NODEFL_CROSS_TRIPLE}-g++)
# ar/ranlib/nm/objdump/strip are found by CMake from the compiler's prefix
# (<triple>-nm etc., package binutils-<triple>).

set(CMAKE_LIBRARY_ARCHITECTURE ${NODEFL_CROSS_TRIPLE})

# Programs (code generators, python) run on the build machine; libraries,
# headers and packages are target ones. With sysroot "/" there is nothing to
# re-root, so these modes only document intent and keep find_program() on the
# host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# Never let find_*() see another architecture's multiarch directories.
file(GLOB _nodefl_multiarch_dirs LIST_DIRECTORIES true
     /usr/lib/*-linux-gnu* /lib/*-linux-gnu* /usr/local/lib/*-linux-gnu*)
foreach(_nodefl_dir IN LISTS _nodefl_multiarch_dirs)
  get_filename_component(_nodefl_name "${_nodefl_dir}" NAME)
  if(IS_DIRECTORY "${_nodefl_dir}" AND NOT _nodefl_name STREQUAL NODEFL_CROSS_TRIPLE)
    list(APPEND CMAKE_SYSTEM_IGNORE_PATH "${_nodefl_dir}")
    # find_package() config directories below it (cmake/GTest, ...) are
    # matched individually, not by prefix.
    file(GLOB _nodefl_cmake_dirs LIST_DIRECTORIES true "${_nodefl_dir}/cmake/*")
    list(APPEND CMAKE_SYSTEM_IGNORE_PATH ${_nodefl_cmake_dirs})
  endif()
endforeach()
list(REMOVE_DUPLICATES CMAKE_SYSTEM_IGNORE_PATH)
unset(_nodefl_multiarch_dirs)
unset(_nodefl_cmake_dirs)
unset(_nodefl_dir)
unset(_nodefl_name)

if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(_nodefl_qemu "${NODEFL_CROSS_QEMU}")
  if(EXISTS "/usr/bin/${NODEFL_CROSS_QEMU}")
    set(_nodefl_qemu "/usr/bin/${NODEFL_CROSS_QEMU}")
  endif()
  if(NOT EXISTS "/usr/lib/${NODEFL_CROSS_TRIPLE}/libc.so.6"
     AND EXISTS "/usr/${NODEFL_CROSS_TRIPLE}/lib/libc.so.6")
    set(CMAKE_CROSSCOMPILING_EMULATOR "${_nodefl_qemu};-L;/usr/${NODEFL_CROSS_TRIPLE}")
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR "${_nodefl_qemu}")
  endif()
  unset(_nodefl_qemu)
endif()
