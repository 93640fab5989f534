// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"

namespace nodefl::server::fedwalk {

SkipGramModel::SkipGramModel(uint32_t n, uint32_t d)
    : num_vertices(n),
      dim(d),
      stride(StrideFor(d)),
      input(size_t{n} * StrideFor(d), 0.0f),
      output(size_t{n} * StrideFor(d), 0.0f) {}

}  // namespace nodefl::server::fedwalk
