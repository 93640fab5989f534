// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Contract checks for programming errors (not for bad input, which gets a
// Status). A failed check calls the panic handler, which by default traps;
// a port may install its own (e.g. to reset a board after logging).
#pragma once

namespace nodefl {

using PanicHandler = void (*)(const char* file, int line, const char* condition);

// Installs `handler` (nullptr restores the default, which traps). The handler
// must not return; if it does, the default trap runs anyway.
void SetPanicHandler(PanicHandler handler);

[[noreturn]] void Panic(const char* file, int line, const char* condition);

}  // namespace nodefl

#define NODEFL_CHECK(condition)                               \
  do {                                                        \
    if (!(condition)) {                                       \
      ::nodefl::Panic(__FILE__, __LINE__, #condition);        \
    }                                                         \
  } while (0)
