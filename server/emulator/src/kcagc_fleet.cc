// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/emulator/kcagc_fleet.h"

#include "nodefl/emulator/emulated_device.h"

namespace nodefl::emulator {

std::string MakeKcagcParticipants(const dataset::Graph& g, uint32_t participants, uint64_t split_seed,
                                  std::vector<kcagc::ParticipantData>* out) {
  out->clear();
  if (g.num_feature_dims == 0) return g.name + " has no features (features.tsv); kCAGC clusters by features and graph";
  if (participants < 2) return "kCAGC needs at least 2 participants";
  if (participants > g.num_feature_dims) {
    return std::to_string(participants) + " participants for " + std::to_string(g.num_feature_dims) +
           " feature columns: each needs at least one";
  }
  std::vector<std::vector<uint32_t>> columns = kcagc::SplitFeatureColumns(g.num_feature_dims, participants, split_seed);
  for (uint32_t l = 0; l < participants; ++l) {
    Result<kcagc::ParticipantData> d = kcagc::MakeParticipantData(
        g.num_nodes, Span<const uint64_t>(g.offsets.data(), g.offsets.size()),
        Span<const uint32_t>(g.neighbours.data(), g.neighbours.size()),
        Span<const uint64_t>(g.feature_offsets.data(), g.feature_offsets.size()),
        Span<const uint32_t>(g.features.data(), g.features.size()), std::move(columns[l]), l, participants);
    if (!d.ok()) return std::string("participant ") + std::to_string(l) + ": " + d.status().str();
    out->push_back(std::move(d).value());
  }
  return {};
}

std::string KcagcFleetSummary(const std::vector<std::shared_ptr<EmulatedDevice>>& devices, bool* agreed) {
  uint32_t clustered = 0, roles = 0;
  const kcagc::Assignment* first = nullptr;
  bool same = true;
  std::string stopped;
  uint64_t contributions = 0, scalars = 0, sealed = 0;
  for (const auto& d : devices) {
    const kcagc::ParticipantRole* r = d->kcagc_role();
    if (r == nullptr) continue;
    ++roles;
    contributions += r->stats().contributions;
    scalars += r->stats().scalars;
    sealed += r->link().stats().sealed_sent;
    if (r->clustered()) {
      ++clustered;
      if (first == nullptr) first = &r->clustering();
      same = same && r->clustering() == *first;
    } else if (!r->failure().ok()) {
      stopped += (stopped.empty() ? "" : ", ") + std::string("device ") + std::to_string(d->id()) + ": " +
                 r->failure().str();
    }
  }
  *agreed = roles > 0 && clustered == roles && same;
  return "kcagc: participants with the final clustering " + std::to_string(clustered) + "/" + std::to_string(roles) +
         (same ? "" : " (THEY DIFFER)") + ", vectors contributed " + std::to_string(contributions) + " (" +
         std::to_string(scalars) + " values), peer messages sealed " + std::to_string(sealed) +
         (stopped.empty() ? "" : "; stopped: " + stopped);
}

}  // namespace nodefl::emulator
