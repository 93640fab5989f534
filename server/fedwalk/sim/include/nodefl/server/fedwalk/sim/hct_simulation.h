// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// In-process stand-in for rounds 1 and 2 of the FedWalk HCT job: every
// vertex of a graph computes its upload with the SDK's own device code
// (CountNeighboursPerBin, NoiseCounts, EstimatedDegree ordering,
// BuildDegreeHistogram, NoiseHistogram), each with its own deterministic
// DRBG, and the result is the transcript the server would hold. Used by
// the benchmark (HCT build time without 10,000 TLS connections) and the
// attack tests. The job over TLS (tests/server/fedwalk_hct_integration_test)
// checks that the real devices produce uploads of exactly this form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/common/hct_transcript.h"

namespace nodefl::server::fedwalk {

struct SimulatedJob {
  HctTranscript transcript;
  std::vector<uint32_t> leaves;          // vertices with an upload, ascending
  std::vector<double> device_epsilon;    // per vertex: what its ledger would hold
  std::string error;                     // empty on success
};

// `neighbours[v]`: sorted neighbour list of vertex v (ids < neighbours.size()).
// params.vertex_count is taken from neighbours.size(); params.bins = 0 means
// floor(ln n). Every vertex takes part; isolated vertices upload an empty
// matrix (paper) or an all-noise histogram (strict).
SimulatedJob SimulateHctUploads(const std::vector<std::vector<uint32_t>>& neighbours,
                                nodefl::fedwalk::HctParameters params, uint64_t seed);

}  // namespace nodefl::server::fedwalk
