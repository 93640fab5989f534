// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kTree artefact (hct_format.h): u32 m, m x u32 leaf vertex ids, m - 1
// x {u32 a, u32 b, f32 height}, little-endian. Parse hands the decoded
// fields to the same validation as FromMerges, so a published tree and a
// parsed one obey the same rules.
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"

namespace nodefl::server::fedwalk {

std::vector<uint8_t> HctTree::Serialize() const {
  const uint32_t m = leaf_count();
  std::vector<uint8_t> out(nodefl::fedwalk::TreeArtefactBytes(m));
  uint8_t* o = out.data();
  StoreU32Le(m, o);
  o += 4;
  for (uint32_t v : leaf_vertex_) {
    StoreU32Le(v, o);
    o += 4;
  }
  for (const Merge& mg : merges_) {
    StoreU32Le(mg.a, o);
    StoreU32Le(mg.b, o + 4);
    StoreF32Le(static_cast<float>(mg.height), o + 8);
    o += nodefl::fedwalk::kTreeMergeBytes;
  }
  return out;
}

std::optional<HctTree> HctTree::Parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4) return std::nullopt;
  const uint8_t* in = bytes.data();
  const uint32_t m = LoadU32Le(in);
  // Size check before any allocation, so a forged count cannot make us
  // reserve gigabytes. TreeArtefactBytes cannot overflow in 64 bits.
  if (bytes.size() != nodefl::fedwalk::TreeArtefactBytes(m)) return std::nullopt;
  in += 4;
  std::vector<uint32_t> leaf_vertex(m);
  for (uint32_t i = 0; i < m; ++i, in += 4) leaf_vertex[i] = LoadU32Le(in);
  std::vector<Merge> merges(m == 0 ? 0 : m - 1);
  for (Merge& mg : merges) {
    mg.a = LoadU32Le(in);
    mg.b = LoadU32Le(in + 4);
    mg.height = LoadF32Le(in + 8);
    in += nodefl::fedwalk::kTreeMergeBytes;
  }
  return Assemble(merges, std::move(leaf_vertex), /*sizes_given=*/false);
}

}  // namespace nodefl::server::fedwalk
