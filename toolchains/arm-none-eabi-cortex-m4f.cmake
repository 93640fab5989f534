# CMake toolchain file: bare-metal Cortex-M4F (ARMv7E-M, Thumb-2, single-
# precision FPU FPv4-SP-D16, hard-float ABI) with Debian's arm-none-eabi GCC
# and newlib-nano. No operating system: CMAKE_SYSTEM_NAME is Generic.
#
# Set-up (Debian bookworm, as root; idempotent):
#   toolchains/install-deps.sh cortex-m
# which installs gcc-arm-none-eabi, libnewlib-arm-none-eabi,
# libstdc++-arm-none-eabi-newlib and qemu-system-arm.
#
# Target libraries (MbedTLS, the nanopb runtime) are built from Debian's
# source packages into a prefix and found there only: pass it as
# NODEFL_TARGET_PREFIX (find_*() never looks at the build machine's
# /usr/include or /usr/lib, whose headers are for another ABI).
# tests/cortex-m/run-firmware-tests.sh does all of this; docs/porting.md,
# "Cortex-M (bare metal)", has the commands.
#
# Flags: -Os with -ffunction-sections -fdata-sections and --gc-sections
# (unreferenced functions and data are dropped at link time, which is what
# makes per-role footprints meaningful), newlib-nano (--specs=nano.specs),
# no system calls library (the board port provides the few newlib needs).

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# A bare-metal executable needs a linker script and start-up code, which the
# compiler checks do not have: they build static libraries instead.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(NODEFL_CORTEX_M_CPU_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(CMAKE_C_FLAGS_INIT "${NODEFL_CORTEX_M_CPU_FLAGS} -ffunction-sections -fdata-sections --specs=nano.specs")
# GCC notes on 32-bit ARM that passing structs with 64-bit members changed
# ABI in GCC 7.1; nothing here links code built by an older GCC.
set(CMAKE_CXX_FLAGS_INIT
    "${NODEFL_CORTEX_M_CPU_FLAGS} -ffunction-sections -fdata-sections --specs=nano.specs -Wno-psabi -fno-threadsafe-statics")
set(CMAKE_ASM_FLAGS_INIT "${NODEFL_CORTEX_M_CPU_FLAGS}")
# (--specs=nano.specs reaches the link through the compile flags, which
# CMake passes to the linker driver too; given twice, GCC refuses it.)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--gc-sections")
# Size over speed, also in the build types with debug information.
set(CMAKE_C_FLAGS_RELWITHDEBINFO_INIT "-Os -g -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO_INIT "-Os -g -DNDEBUG")
set(CMAKE_C_FLAGS_MINSIZEREL_INIT "-Os -DNDEBUG")
set(CMAKE_CXX_FLAGS_MINSIZEREL_INIT "-Os -DNDEBUG")
set(CMAKE_C_FLAGS_RELEASE_INIT "-Os -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE_INIT "-Os -DNDEBUG")

set(NODEFL_TARGET_PREFIX "" CACHE PATH "Prefix holding the target's MbedTLS and nanopb (include/, lib/)")
if(NODEFL_TARGET_PREFIX)
  set(CMAKE_FIND_ROOT_PATH "${NODEFL_TARGET_PREFIX}")
endif()
# Programs (the nanopb generator, python) run on the build machine; headers,
# libraries and CMake packages come from the target prefix only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
