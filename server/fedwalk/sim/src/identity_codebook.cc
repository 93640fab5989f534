// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "identity_codebook.h"

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::server::fedwalk::walk_sim {

namespace fw = nodefl::fedwalk;

std::vector<uint8_t> IdentityCodebookArtefact(const std::vector<bool>& in_tree) {
  const auto n = static_cast<uint32_t>(in_tree.size());
  size_t entries = 0;
  for (bool present : in_tree) entries += present ? 1 : 0;
  std::vector<uint8_t> out(
      fw::kCodebookHeaderBytes + size_t{n} * fw::kCodebookRowHeaderBytes + entries * fw::kCodebookEntryBytes, 0);
  uint8_t* at = out.data();
  StoreU32Le(n, at);
  StoreU16Le(1, at + 4);  // K = 1; the reserved u16 stays 0
  at += fw::kCodebookHeaderBytes;
  for (uint32_t v = 0; v < n; ++v) {
    // Row header: count, reserved 0, truncated mass 0 (nothing is left out).
    StoreU16Le(static_cast<uint16_t>(in_tree[v] ? 1 : 0), at);
    at += fw::kCodebookRowHeaderBytes;
    if (!in_tree[v]) continue;
    // One entry: always accepted, so the alias is never read.
    StoreU32Le(v, at);
    StoreU32Le(fw::kQ31One, at + 4);
    StoreU32Le(0, at + 8);
    at += fw::kCodebookEntryBytes;
  }
  return out;
}

}  // namespace nodefl::server::fedwalk::walk_sim
