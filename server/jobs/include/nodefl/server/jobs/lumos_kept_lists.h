// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the Lumos tree jobs (lumos_trim_job.h, lumos_mcmc_job.h) do with the
// kept-neighbour lists devices upload in paper mode: collect the records
// (u32 ids), check Lumos Eq. 10 over every edge, and write
// lumos-trees.tsv. `Devices` maps a device id to a record with
// `bool reported` (its final report arrived) and `std::vector<uint32_t>
// kept` (sorted before the check).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/span.h"

namespace nodefl::server::jobs {

// A kept-list record: u32 ids, appended to `kept`.
inline void AppendKept(ConstByteSpan bytes, std::vector<uint32_t>& kept) {
  for (size_t at = 0; at + 4 <= bytes.size(); at += 4) kept.push_back(LoadU32Le(bytes.data() + at));
}

struct KeptCoverage {
  uint64_t uncovered = 0;   // both endpoints reported, neither keeps the edge
  uint64_t unverified = 0;  // an endpoint did not report and the other does not keep it
};

template <typename Devices>
KeptCoverage CheckKeptCoverage(const std::vector<std::pair<uint32_t, uint32_t>>& edges, const Devices& devices) {
  KeptCoverage c;
  const auto reported_keeps = [&devices](uint32_t a, uint32_t b, bool* reported) {
    auto it = devices.find(a);
    *reported = it != devices.end() && it->second.reported;
    return *reported && std::binary_search(it->second.kept.begin(), it->second.kept.end(), b);
  };
  for (const auto& [a, b] : edges) {
    bool ra = false, rb = false;
    const bool a_keeps = reported_keeps(a, b, &ra);
    const bool b_keeps = reported_keeps(b, a, &rb);
    if (a_keeps || b_keeps) continue;
    if (ra && rb) {
      ++c.uncovered;
    } else {
      ++c.unverified;
    }
  }
  return c;
}

// lumos-trees.tsv: "id<TAB>kept ids, comma-separated" for every device that
// reported. False when the file could not be written.
template <typename Devices>
bool WriteKeptTrees(const std::filesystem::path& path, const Devices& devices) {
  std::ofstream out(path);
  for (const auto& [id, d] : devices) {
    if (!d.reported) continue;
    out << id << '\t';
    for (size_t i = 0; i < d.kept.size(); ++i) out << (i ? "," : "") << d.kept[i];
    out << '\n';
  }
  return static_cast<bool>(out);
}

}  // namespace nodefl::server::jobs
