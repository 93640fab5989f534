# CMake toolchain file: cross-build for 32-bit ARM Linux, hard-float
# (Debian armhf: ARMv7-A, Thumb-2, VFPv3-D16) with Debian's cross compiler,
# and run the results under qemu-user.
#
# Set-up (Debian bookworm, as root; idempotent):
#   toolchains/install-deps.sh armhf
# which installs g++-arm-linux-gnueabihf, qemu-user and the target libraries
# libc6:armhf libstdc++6:armhf libmbedtls-dev:armhf libgtest-dev:armhf.
#
# Usage (the SDK and its unit tests only; the server is host-only):
#   cmake -S . -B build/armhf -G Ninja -DNODEFL_SDK_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake
#   cmake --build build/armhf -j2
#   ctest --test-dir build/armhf --output-on-failure   # runs via qemu-arm
#
# tests/run-all.sh does all of this. Details on how target libraries are
# located (and host ones kept out) are in debian-multiarch.cmake.

set(NODEFL_CROSS_TRIPLE arm-linux-gnueabihf)
set(NODEFL_CROSS_PROCESSOR arm)
set(NODEFL_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/debian-multiarch.cmake)

# GCC notes on 32-bit ARM that passing structs with 64-bit members (Span<double>
# etc.) changed ABI in GCC 7.1. Only code built with GCC < 7 would care and
# nothing here links against such code, so silence the hundreds of notes.
set(CMAKE_C_FLAGS_INIT "-Wno-psabi")
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
