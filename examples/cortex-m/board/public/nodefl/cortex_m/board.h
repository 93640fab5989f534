// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Board port for QEMU's mps2-an386 (Cortex-M4F): what the SDK's platform
// hooks (nodefl/platform/platform.h) and a firmware need from the board.
//
//   log       CMSDK APB UART0 (0x40004000), polled; one line per write. QEMU
//             connects it to stdio with -nographic (-serial mon:stdio).
//   time      SysTick at the core clock (25 MHz on AN386), a 1 ms interrupt
//             counting into 64 bits; BoardMicros() adds the current count,
//             so now_us has microsecond resolution and never decreases.
//   entropy   NONE on this board: QEMU's MPS2 models no TRNG. The only
//             source here is TestOnlyEntropyFill, a deterministic generator
//             that is NOT entropy (every boot draws the same keys and noise)
//             and exists so the firmware tests can seed a Drbg. A real board
//             points EntropySource::fill at its TRNG peripheral (STM32 RNG,
//             NXP TRNG, nRF52 RNG, ...), reading until `out` is full and
//             failing on the peripheral's seed/clock error flags; MbedTLS
//             itself needs no entropy hook because the SDK seeds CTR_DRBG
//             from EntropySource (sdk/random).
//   exit      semihosting SYS_EXIT_EXTENDED: qemu-system-arm -semihosting
//             exits with the given code (a real board would reset instead).
//   memory    MbedTLS allocates only from the buffer given to
//             BoardInitMbedtlsHeap (MbedTLS's buffer allocator); newlib's
//             heap is refused (_sbrk fails and is counted).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/platform/platform.h"

namespace nodefl::cortex_m {

inline constexpr uint32_t kCoreClockHz = 25'000'000;

// UART and SysTick. Called once from main(), before anything logs.
void BoardInit();

// Microseconds since BoardInit (the SDK's now_us).
uint64_t BoardMicros();

// Writes `text` to UART0 as is.
void BoardWrite(const char* text);

// Ends the run: qemu-system-arm exits with `code` (semihosting).
[[noreturn]] void BoardExit(int code);

// Serves every MbedTLS allocation (X.509, bignum, TLS records) from
// `buffer`; paints it so that MbedtlsHeapHighWater can tell how much was
// ever touched. Until it is called, MbedTLS allocations fail.
void BoardInitMbedtlsHeap(Span<uint8_t> buffer);
// Bytes of that buffer ever used (from its start to the highest byte
// MbedTLS's allocator wrote): an upper bound of its peak.
size_t MbedtlsHeapHighWater();

// Deepest stack use since reset, in bytes (the start-up code paints the
// stack).
size_t StackHighWater();

// Calls of newlib's _sbrk, i.e. attempts to grow a malloc heap. The
// firmware expects 0: nothing may allocate from the system heap.
uint32_t SbrkCalls();

// TEST ONLY, NOT ENTROPY: see the file comment. Deterministic bytes from a
// fixed seed mixed with `*context` (a uint64_t, may be null).
Status TestOnlyEntropyFill(void* context, Span<uint8_t> out);

// Log sink writing "[level] line\r\n" to UART0.
void UartLog(void* context, LogLevel level, const char* line);

// The board's Platform: UART log; entropy from TestOnlyEntropyFill (this
// board has nothing better; a product's port uses its TRNG here).
Platform MakeBoardPlatform(LogLevel min_log_level);

}  // namespace nodefl::cortex_m
