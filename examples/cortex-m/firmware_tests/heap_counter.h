// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The firmware's stand-in for tests/support/heap_counter.h (same names, so
// the SDK tests compile unchanged): HeapAllocationCount counts the calls
// of newlib's allocator, which every malloc and operator new reaches
// (harness.cc).
#pragma once

#include <cstddef>

namespace nodefl::testing {

size_t HeapAllocationCount();

}  // namespace nodefl::testing

#define NODEFL_EXPECT_NO_HEAP(statement)                                          \
  do {                                                                           \
    const size_t nodefl_heap_before_ = ::nodefl::testing::HeapAllocationCount(); \
    statement;                                                                   \
    EXPECT_EQ(::nodefl::testing::HeapAllocationCount() - nodefl_heap_before_, 0u) \
        << "heap allocation inside: " #statement;                                \
  } while (0)
