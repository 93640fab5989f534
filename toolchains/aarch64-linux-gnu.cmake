# CMake toolchain file: cross-build for 64-bit ARM Linux (Debian arm64) with
# Debian's cross compiler, and run the results under qemu-user.
#
# Set-up (Debian bookworm, as root; idempotent):
#   toolchains/install-deps.sh arm64
# which installs g++-aarch64-linux-gnu, qemu-user and the target libraries
# libc6:arm64 libstdc++6:arm64 libmbedtls-dev:arm64 libgtest-dev:arm64.
#
# Usage (the SDK and its unit tests only; the server is host-only):
#   cmake -S . -B build/aarch64 -G Ninja -DNODEFL_SDK_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake
#   cmake --build build/aarch64 -j2
#   ctest --test-dir build/aarch64 --output-on-failure   # runs via qemu-aarch64
#
# tests/run-all.sh does all of this. Details on how target libraries are
# located (and host ones kept out) are in debian-multiarch.cmake.

set(NODEFL_CROSS_TRIPLE aarch64-linux-gnu)
set(NODEFL_CROSS_PROCESSOR aarch64)
set(NODEFL_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-multiarch.cmake)
