// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Builders for the HCT job's server-side artefacts (hct_format.h layouts),
// written independently of the device's parsers so that tests check the
// parsers against the documented format, not against themselves.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"

namespace nodefl::fedwalk::testing {

inline void PutU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
inline void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void PutF32(std::vector<uint8_t>& out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutU32(out, bits);
}
inline float GetF32(const uint8_t* p) {
  const uint32_t bits = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}
inline uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// kDictionary: rows[v] has `bins` values (NaN rows mark absent vertices).
inline std::vector<uint8_t> EncodeDictionary(const std::vector<std::vector<float>>& rows) {
  std::vector<uint8_t> out;
  for (const auto& row : rows) {
    for (float v : row) PutF32(out, v);
  }
  return out;
}

inline std::vector<float> NanRow(uint32_t bins) {
  return std::vector<float>(bins, std::numeric_limits<float>::quiet_NaN());
}

// kTree: leaves, then merges {a, b, height}.
struct TestMerge {
  uint32_t a, b;
  float height;
};
inline std::vector<uint8_t> EncodeTree(const std::vector<uint32_t>& leaves, const std::vector<TestMerge>& merges) {
  std::vector<uint8_t> out;
  PutU32(out, static_cast<uint32_t>(leaves.size()));
  for (uint32_t l : leaves) PutU32(out, l);
  for (const TestMerge& m : merges) {
    PutU32(out, m.a);
    PutU32(out, m.b);
    PutF32(out, m.height);
  }
  return out;
}

// A valid caterpillar tree over `leaves`: merge 0 joins leaves 0 and 1,
// merge i joins node m+i-1 with leaf i+1, heights 0.5, 1.5, ...
inline std::vector<uint8_t> CaterpillarTree(const std::vector<uint32_t>& leaves) {
  const uint32_t m = static_cast<uint32_t>(leaves.size());
  std::vector<TestMerge> merges;
  for (uint32_t i = 0; i + 1 < m; ++i) {
    merges.push_back({i == 0 ? 0u : m + i - 1, i + 1, 0.5f + static_cast<float>(i)});
  }
  return EncodeTree(leaves, merges);
}

// kCodebook.
struct TestCodebookRow {
  float truncated_mass = 0.0f;
  std::vector<CodebookEntry> entries;
};
inline std::vector<uint8_t> EncodeCodebook(uint32_t vertex_count, uint16_t k,
                                           const std::vector<TestCodebookRow>& rows) {
  std::vector<uint8_t> out;
  PutU32(out, vertex_count);
  PutU16(out, k);
  PutU16(out, 0);
  for (const TestCodebookRow& row : rows) {
    PutU16(out, static_cast<uint16_t>(row.entries.size()));
    PutU16(out, 0);
    PutF32(out, row.truncated_mass);
    for (const CodebookEntry& e : row.entries) {
      PutU32(out, e.vertex);
      PutU32(out, e.accept_q31);
      PutU32(out, e.alias);
    }
  }
  return out;
}

// A deterministic, valid codebook: vertex v gets 1 + (v * 7) % k entries,
// or none if absent[v].
inline std::vector<TestCodebookRow> MakeCodebookRows(uint32_t n, uint16_t k, const std::vector<bool>& absent) {
  std::vector<TestCodebookRow> rows(n);
  for (uint32_t v = 0; v < n; ++v) {
    if (v < absent.size() && absent[v]) continue;
    const uint32_t count = 1 + (v * 7) % k;
    rows[v].truncated_mass = 0.01f * static_cast<float>(v % 5);
    for (uint32_t j = 0; j < count; ++j) {
      CodebookEntry e;
      e.vertex = (v * 13 + j * 5 + 1) % n;
      e.accept_q31 = (kQ31One / (j + 2)) + v;
      e.alias = (j + 1) % count;
      rows[v].entries.push_back(e);
    }
  }
  return rows;
}

}  // namespace nodefl::fedwalk::testing
