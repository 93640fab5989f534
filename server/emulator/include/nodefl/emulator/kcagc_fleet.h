// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The emulator's kCAGC participants (job "kcagc"): L organisations, device
// ids 0 .. L-1, each holding the whole graph of a dataset and its share of
// the feature columns, split as the one-process runs split them with the
// same seed (sdk/kcagc role participant_data.h), so that a job over TLS
// and nodefl-kcagc-sim cluster the same slices. Device l serves a
// kcagc::ParticipantRole over participant l's data (emulated_device.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/kcagc/participant_data.h"

namespace nodefl::emulator {

class EmulatedDevice;

// Participant l's data at (*out)[l]. Empty on success, else why not (no
// features, fewer than 2 participants, more participants than columns).
std::string MakeKcagcParticipants(const dataset::Graph& graph, uint32_t participants, uint64_t split_seed,
                                  std::vector<kcagc::ParticipantData>* out);

// After the run: how many participants received the final clustering (all
// of them the same), and why the others stopped. `agreed`: every device's
// role finished with the same clustering.
std::string KcagcFleetSummary(const std::vector<std::shared_ptr<EmulatedDevice>>& devices, bool* agreed);

}  // namespace nodefl::emulator
