// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kCodebook artefact (hct_format.h): u32 vertex_count, u16 K, u16 0,
// then per vertex: u16 count, u16 0, f32 truncated mass, count x {u32
// vertex, u32 accept (Q31), u32 alias}. Little-endian.
#include <algorithm>
#include <cmath>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/hct/codebook.h"

namespace nodefl::server::fedwalk {

namespace fmt = nodefl::fedwalk;

std::vector<uint8_t> Codebook::Serialize() const {
  std::vector<uint8_t> out(fmt::kCodebookHeaderBytes + fmt::kCodebookRowHeaderBytes * size_t{vertex_count_} +
                           fmt::kCodebookEntryBytes * entries_.size());
  uint8_t* o = out.data();
  StoreU32Le(vertex_count_, o);
  StoreU16Le(static_cast<uint16_t>(k_), o + 4);
  StoreU16Le(0, o + 6);
  o += fmt::kCodebookHeaderBytes;
  for (uint32_t v = 0; v < vertex_count_; ++v) {
    const std::span<const Entry> entries = row(v);
    StoreU16Le(static_cast<uint16_t>(entries.size()), o);
    StoreU16Le(0, o + 2);
    StoreF32Le(truncated_mass_[v], o + 4);
    o += fmt::kCodebookRowHeaderBytes;
    for (const Entry& e : entries) {
      StoreU32Le(e.vertex, o);
      StoreU32Le(e.accept_q31, o + 4);
      StoreU32Le(e.alias, o + 8);
      o += fmt::kCodebookEntryBytes;
    }
  }
  return out;
}

std::optional<Codebook> Codebook::Parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < fmt::kCodebookHeaderBytes) return std::nullopt;
  const uint8_t* in = bytes.data();
  const uint32_t vertex_count = LoadU32Le(in);
  const uint32_t k = LoadU16Le(in + 4);
  if (LoadU16Le(in + 6) != 0 || k < 1 || k > fmt::kMaxCodebookK || vertex_count >= fmt::kAbsentVertex) {
    return std::nullopt;
  }
  size_t left = bytes.size() - fmt::kCodebookHeaderBytes;
  in += fmt::kCodebookHeaderBytes;
  // Every row needs its header, so a forged vertex_count fails here,
  // before anything is allocated for it.
  if (left / fmt::kCodebookRowHeaderBytes < vertex_count) return std::nullopt;

  Codebook cb;
  cb.vertex_count_ = vertex_count;
  cb.k_ = k;
  cb.row_begin_.resize(size_t{vertex_count} + 1);
  cb.truncated_mass_.resize(vertex_count);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < vertex_count; ++v) {
    if (left < fmt::kCodebookRowHeaderBytes) return std::nullopt;
    const uint32_t count = LoadU16Le(in);
    const float mass = LoadF32Le(in + 4);
    if (count > k || LoadU16Le(in + 2) != 0) return std::nullopt;
    // A kept entry always has positive probability, so the dropped mass is
    // below 1; an empty row drops nothing it could report.
    if (!(mass >= 0.0f && mass < 1.0f) || (count == 0 && mass != 0.0f)) return std::nullopt;
    in += fmt::kCodebookRowHeaderBytes;
    left -= fmt::kCodebookRowHeaderBytes;
    if (left / fmt::kCodebookEntryBytes < count) return std::nullopt;
    cb.row_begin_[v] = cb.entries_.size();
    cb.truncated_mass_[v] = mass;
    ids.clear();
    for (uint32_t j = 0; j < count; ++j) {
      const Entry e{LoadU32Le(in), LoadU32Le(in + 4), LoadU32Le(in + 8)};
      if (e.vertex >= vertex_count || e.accept_q31 > fmt::kQ31One || e.alias >= count) return std::nullopt;
      cb.entries_.push_back(e);
      ids.push_back(e.vertex);
      in += fmt::kCodebookEntryBytes;
      left -= fmt::kCodebookEntryBytes;
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) return std::nullopt;
  }
  if (left != 0) return std::nullopt;
  cb.row_begin_[vertex_count] = cb.entries_.size();
  return cb;
}

}  // namespace nodefl::server::fedwalk
