// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/skipgram_options.h"

#include <cmath>

namespace nodefl::server::fedwalk {

std::string ValidateSkipGramOptions(const SkipGramOptions& o) {
  // Upper bounds only catch nonsense (a mistyped number), not taste.
  if (o.dim < 1 || o.dim > 4096) return "dim must be 1 .. 4096";
  if (o.window < 1 || o.window > 100000) return "window must be 1 .. 100000";
  if (o.negative < 1 || o.negative > 1000) return "negative must be 1 .. 1000";
  if (o.epochs > 100000) return "epochs must be 0 (chosen from the walks) .. 100000";
  if (!std::isfinite(o.alpha) || !(o.alpha > 0)) return "alpha must be a positive number";
  if (!std::isfinite(o.min_alpha) || o.min_alpha < 0 || o.min_alpha > o.alpha) {
    return "min_alpha must be between 0 and alpha";
  }
  if (!std::isfinite(o.init_range) || o.init_range < 0 || o.init_range > 1000) {
    return "init_range must be a number in 0 .. 1000";
  }
  if (o.threads > 1024) return "threads must be 0 (hardware threads) .. 1024";
  if (!std::isfinite(o.sample) || o.sample < 0) return "sample must be 0 (off) or a positive number";
  return "";
}

}  // namespace nodefl::server::fedwalk
