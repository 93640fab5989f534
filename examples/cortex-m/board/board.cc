// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/cortex_m/board.h"

#include <mbedtls/memory_buffer_alloc.h>

#include <cerrno>
#include <cstring>

extern "C" void SysTick_Handler();

namespace nodefl::cortex_m {
namespace {

// ---- CMSDK APB UART0 (AN386: 0x40004000) --------------------------------------
struct CmsdkUart {
  volatile uint32_t data;
  volatile uint32_t state;  // bit 0: transmit buffer full
  volatile uint32_t ctrl;   // bit 0: transmit enable
  volatile uint32_t intstatus;
  volatile uint32_t bauddiv;
};
CmsdkUart& Uart0() { return *reinterpret_cast<CmsdkUart*>(0x40004000u); }

// ---- SysTick ------------------------------------------------------------------
struct SysTick {
  volatile uint32_t csr;  // bit 0 enable, 1 interrupt, 2 core clock, 16 count flag
  volatile uint32_t rvr;
  volatile uint32_t cvr;
};
SysTick& Tick() { return *reinterpret_cast<SysTick*>(0xE000E010u); }
inline constexpr uint32_t kTicksPerMs = kCoreClockHz / 1000;
volatile uint64_t g_ms = 0;

// ---- memory accounting ----------------------------------------------------------
inline constexpr uint8_t kHeapPaint = 0xA5;
Span<uint8_t> g_mbedtls_heap;
volatile uint32_t g_sbrk_calls = 0;

}  // namespace

void BoardInit() {
  CmsdkUart& uart = Uart0();
  uart.bauddiv = 16;  // the minimum the UART accepts; QEMU ignores the rate
  uart.ctrl = 1;
  SysTick& t = Tick();
  t.rvr = kTicksPerMs - 1;
  t.cvr = 0;
  t.csr = 0x7;  // core clock, interrupt, enable
}

uint64_t BoardMicros() {
  // The millisecond count and the down-counter must come from the same
  // millisecond: read the count around the counter until it is stable.
  uint64_t ms;
  uint32_t cvr;
  do {
    ms = g_ms;
    cvr = Tick().cvr;
  } while (ms != g_ms);
  return ms * 1000 + (kTicksPerMs - 1 - cvr) / (kTicksPerMs / 1000);
}

void BoardWrite(const char* text) {
  CmsdkUart& uart = Uart0();
  for (; *text != '\0'; ++text) {
    while ((uart.state & 1u) != 0) {
    }
    uart.data = static_cast<uint8_t>(*text);
  }
}

void BoardExit(int code) {
  // SYS_EXIT_EXTENDED (0x20) takes {reason, exit code}; QEMU exits with
  // the code. ADP_Stopped_ApplicationExit = 0x20026.
  volatile uint32_t block[2] = {0x20026u, static_cast<uint32_t>(code)};
  register uint32_t r0 __asm__("r0") = 0x20;
  register volatile uint32_t* r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  for (;;) {
    __asm__ volatile("wfi");
  }
}

void BoardInitMbedtlsHeap(Span<uint8_t> buffer) {
  mbedtls_memory_buffer_alloc_init(buffer.data(), buffer.size());
  // The allocator zeroes the buffer and writes one header (32 bytes in
  // MbedTLS 2.28) at its start; paint the free space behind it.
  constexpr size_t kHeaderRoom = 64;
  if (buffer.size() > kHeaderRoom) {
    std::memset(buffer.data() + kHeaderRoom, kHeapPaint, buffer.size() - kHeaderRoom);
  }
  g_mbedtls_heap = buffer;
}

size_t MbedtlsHeapHighWater() {
  if (g_mbedtls_heap.size() <= 64) return 0;
  size_t n = g_mbedtls_heap.size();
  while (n > 64 && g_mbedtls_heap[n - 1] == kHeapPaint) --n;
  return n > 64 ? n : 0;
}

uint32_t SbrkCalls() { return g_sbrk_calls; }

Status TestOnlyEntropyFill(void* context, Span<uint8_t> out) {
  // SplitMix64 over a counter: well-mixed, reproducible, and NOT secret.
  static uint64_t counter = 0;
  const uint64_t salt = context != nullptr ? *static_cast<const uint64_t*>(context) : 0;
  for (size_t i = 0; i < out.size(); i += 8) {
    uint64_t z = (salt ^ 0x6E6F6465666C2D31ull) + 0x9E3779B97F4A7C15ull * ++counter;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (size_t j = 0; j < 8 && i + j < out.size(); ++j) out[i + j] = static_cast<uint8_t>(z >> (8 * j));
  }
  return Status::Ok();
}

void UartLog(void* /*context*/, LogLevel level, const char* line) {
  BoardWrite("[");
  BoardWrite(LogLevelName(level));
  BoardWrite("] ");
  BoardWrite(line);
  BoardWrite("\r\n");
}

Platform MakeBoardPlatform(LogLevel min_log_level) {
  Platform p;
  p.entropy.fill = &TestOnlyEntropyFill;
  p.log.write = &UartLog;
  p.log.min_level = min_log_level;
  return p;
}

}  // namespace nodefl::cortex_m

extern "C" {

void SysTick_Handler() { nodefl::cortex_m::g_ms = nodefl::cortex_m::g_ms + 1; }

// ---- newlib's system calls -------------------------------------------------------
// Only what newlib-nano references from the functions the SDK uses (string
// formatting, exit). No heap: _sbrk fails, so a malloc anywhere returns
// null, and is counted so a firmware can prove none happened. (The test
// firmware replaces the allocator itself for its test code's std::vector.)
void* _sbrk(ptrdiff_t /*increment*/) {
  nodefl::cortex_m::g_sbrk_calls = nodefl::cortex_m::g_sbrk_calls + 1;
  errno = ENOMEM;
  return reinterpret_cast<void*>(-1);
}

void _exit(int code) { nodefl::cortex_m::BoardExit(code); }

}  // extern "C"
