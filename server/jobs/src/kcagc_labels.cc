// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_labels.h"

#include <charconv>
#include <fstream>

namespace nodefl::server::jobs {
namespace {

// Largest node id and class accepted (a typo must not allocate gigabytes).
constexpr uint32_t kMaxNode = 100'000'000;
constexpr uint32_t kMaxClass = 1'000'000;

bool ParseField(std::string_view text, uint32_t limit, uint32_t* out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && *out <= limit;
}

}  // namespace

std::string ReadKcagcLabels(const std::string& path, KcagcLabels* out) {
  std::ifstream in(path);
  if (!in) return path + ": cannot be read";
  *out = KcagcLabels{};
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    uint32_t node = 0, label = 0;
    if (tab == std::string::npos || !ParseField(std::string_view(line).substr(0, tab), kMaxNode, &node) ||
        !ParseField(std::string_view(line).substr(tab + 1), kMaxClass, &label)) {
      return path + ":" + std::to_string(number) + ": expected \"node<TAB>class\" with whole numbers";
    }
    if (node >= out->of_node.size()) out->of_node.resize(size_t{node} + 1, -1);
    int32_t& slot = out->of_node[node];
    if (slot >= 0 && slot != static_cast<int32_t>(label)) {
      return path + ":" + std::to_string(number) + ": node " + std::to_string(node) +
             " has a second class; the clustering measures need one class per node";
    }
    slot = static_cast<int32_t>(label);
    if (label + 1 > out->classes) out->classes = label + 1;
  }
  if (out->of_node.empty()) return path + ": no labels";
  return {};
}

}  // namespace nodefl::server::jobs
