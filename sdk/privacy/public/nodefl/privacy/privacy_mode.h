// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every privacy mechanism in nodefl runs in one of two modes:
//   * kStrict (the default): the guarantee nodefl states is the guarantee it
//     delivers, against the strongest observer the deployment has (the
//     server, a relay that sees every message, all receivers together).
//   * kPaper: reproduces the seed paper's mechanism exactly, for comparison
//     with published numbers. Where the paper's stated guarantee is wrong or
//     weaker than it says, the ledger records the TRUE cost, not the paper's.
// docs/privacy.md lists, per mechanism, what differs between the two modes.
#pragma once

#include <cstdint>

namespace nodefl {

enum class PrivacyMode : uint8_t {
  kStrict = 0,
  kPaper = 1,
};

inline constexpr PrivacyMode kDefaultPrivacyMode = PrivacyMode::kStrict;

const char* PrivacyModeName(PrivacyMode mode);

}  // namespace nodefl
