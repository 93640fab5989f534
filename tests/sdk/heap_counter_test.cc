// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The no-heap proof is only as good as the counter behind it: these tests show
// it sees allocations made directly, through operator new, and from inside a
// shared library (libstdc++), so a passing NODEFL_EXPECT_NO_HEAP means
// something.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "heap_counter.h"

namespace {

// Keeps the optimiser from eliding an allocation/free pair, which it may.
void Escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

TEST(HeapCounterTest, SeesMallocAndNew) {
  const size_t before = nodefl::testing::HeapAllocationCount();
  void* p = std::malloc(32);
  Escape(p);
  auto q = std::make_unique<int>(3);
  Escape(q.get());
  std::free(p);
  EXPECT_GE(nodefl::testing::HeapAllocationCount() - before, 2u);
}

TEST(HeapCounterTest, SeesAllocationInsideSharedLibrary) {
  const size_t before = nodefl::testing::HeapAllocationCount();
  std::string s(200, 'x');  // allocated by libstdc++ code
  EXPECT_GE(nodefl::testing::HeapAllocationCount() - before, 1u);
  EXPECT_EQ(s.size(), 200u);
}

TEST(HeapCounterTest, ExpectNoHeapFailsOnAllocation) {
  EXPECT_NONFATAL_FAILURE(
      {
        NODEFL_EXPECT_NO_HEAP({
          void* p = std::malloc(8);
          Escape(p);
          std::free(p);
        });
      },
      "heap allocation inside");
}

}  // namespace
