// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's pieces of Lumos link prediction (Sec. VI-C "unsupervised
// learning", Sec. VIII-A: edges split 80/5/15, ROC-AUC; contract:
// sdk/protocol/public/nodefl/protocol/lumos/train_format.h): the partners
// (negative samples) the server draws for the devices, and the ROC-AUC over
// the binned scores the devices upload.
//
// Partners are drawn without knowing the graph: the server never learns an
// edge, so it pairs devices blindly. A drawn partner may be a neighbour;
// both ends know it (each knows its own neighbours) and both skip it, so
// what is used stays symmetric. With a sparse graph that is rare.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "nodefl/protocol/lumos/train_format.h"

namespace nodefl::server::lumos {

// The kTrainPartners use byte.
enum class PartnerUse : uint8_t { kTraining = 0, kEvaluation = 1 };

struct Partner {
  uint32_t id = 0;
  PartnerUse use = PartnerUse::kTraining;
  bool operator==(const Partner&) const = default;
};

// `training` + `evaluation` random perfect matchings over `ids` (distinct;
// the draw depends on their order, so callers pass them ascending): each a
// uniform shuffle from the seed, then positions 0-1, 2-3, ... paired (with
// an odd count the last one sits that matching out). The first `training`
// matchings give training partners, the rest evaluation partners. A pair
// drawn in an earlier matching is dropped (no duplicates), so a device gets
// at most `training` training and `evaluation` evaluation partners, never
// itself. Result: per ids[i], its partners sorted by id; symmetric (b is a
// partner of a with some use exactly when a is one of b with that use).
std::vector<std::vector<Partner>> LinkPartners(std::span<const uint32_t> ids, uint32_t training,
                                               uint32_t evaluation, uint64_t seed);

// One device's partners as kTrainPartners records (train_format.h): id (4,
// little endian) | use (1) per entry, at most kTrainPartnersPerRecord
// entries per record; none for no partner.
std::vector<std::vector<uint8_t>> PartnerRecords(std::span<const Partner> partners);

// Counts per ScoreBin (train_format.h).
using ScoreHistogram = std::array<uint64_t, nodefl::lumos::kScoreBins>;

// The ROC-AUC over bins: P(positive's bin > negative's bin) + 1/2 P(same
// bin), over every (positive, negative) pair. NaN (undefined) when either
// side is empty.
double BinnedAuc(const ScoreHistogram& positives, const ScoreHistogram& negatives);

}  // namespace nodefl::server::lumos
