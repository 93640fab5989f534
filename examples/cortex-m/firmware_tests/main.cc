// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The firmware tests' entry point on mps2-an386: runs every test compiled
// in (gtest/gtest.h), prints the memory the run used, and returns the
// number of failed tests, which the start-up code hands to semihosting's
// exit: qemu-system-arm exits 0 only when all passed.
#include <gtest/gtest.h>

#include <cstdio>

#include "nodefl/cortex_m/board.h"

namespace {
// MbedTLS's heap (X.509, bignum): what the OT and sealing tests allocate
// inside MbedTLS, never from newlib.
alignas(8) uint8_t g_mbedtls_heap[NODEFL_FW_MBEDTLS_HEAP_BYTES];
}  // namespace

int main() {
  using namespace nodefl::cortex_m;
  BoardInit();
  BoardWrite("nodefl firmware tests on mps2-an386 (Cortex-M4F)\r\n");
  BoardWrite("entropy: TEST-ONLY deterministic source (QEMU's MPS2 has no TRNG)\r\n");
  BoardInitMbedtlsHeap(nodefl::Span<uint8_t>(g_mbedtls_heap, sizeof g_mbedtls_heap));
  const uint64_t t0 = BoardMicros();
  const int failed = fwtest::RunAllTests();
  char line[160];
  std::snprintf(line, sizeof line,
                "run: %lu ms; stack high-water %u bytes; MbedTLS heap high-water %u of %u bytes\r\n",
                static_cast<unsigned long>((BoardMicros() - t0) / 1000), static_cast<unsigned>(StackHighWater()),
                static_cast<unsigned>(MbedtlsHeapHighWater()), static_cast<unsigned>(sizeof g_mbedtls_heap));
  BoardWrite(line);
  BoardWrite(failed == 0 ? "RESULT: PASS\r\n" : "RESULT: FAIL\r\n");
  return failed > 125 ? 125 : failed;
}
