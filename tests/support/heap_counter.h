// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Counts every heap call made by the process (malloc family and every
// operator new), by interposing those symbols in the test executable and
// forwarding to glibc. SDK tests wrap calls in NODEFL_EXPECT_NO_HEAP to prove
// the device core never allocates, including inside MbedTLS and libstdc++.
#pragma once

#include <cstddef>

namespace nodefl::testing {

// Number of allocation calls (malloc, calloc, realloc, aligned variants,
// operator new) since the process started.
size_t HeapAllocationCount();

}  // namespace nodefl::testing

// Runs `statement` and fails the test if it made any heap allocation.
#define NODEFL_EXPECT_NO_HEAP(statement)                                          \
  do {                                                                           \
    const size_t nodefl_heap_before_ = ::nodefl::testing::HeapAllocationCount(); \
    statement;                                                                   \
    EXPECT_EQ(::nodefl::testing::HeapAllocationCount() - nodefl_heap_before_, 0u) \
        << "heap allocation inside: " #statement;                                \
  } while (0)
