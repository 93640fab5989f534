// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/assert.h"

namespace nodefl {
namespace {
PanicHandler g_panic_handler = nullptr;
}  // namespace

void SetPanicHandler(PanicHandler handler) { g_panic_handler = handler; }

void Panic(const char* file, int line, const char* condition) {
  if (g_panic_handler != nullptr) g_panic_handler(file, line, condition);
  __builtin_trap();
}

}  // namespace nodefl
