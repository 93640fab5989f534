// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The honest-but-curious server's attack on the FedWalk HCT job: from what
// it received and published (HctTranscript), guess every device's
// neighbour set, and score the guesses against the true graph. Used by the
// tests and docs/privacy.md to measure what each mode leaks.
//
//   paper mode: every row of M_v is some neighbour's dictionary entry, so
//     matching rows to the dictionary (bit-exact floats) names neighbours;
//     a row shared by several vertices names all of them.
//   strict mode: the histogram H_v says how many of v's neighbours have a
//     degree-vector entry in each log bucket, per bin. Each candidate u
//     falls in one bucket per bin; the attack ranks candidates by the
//     naive-Bayes score sum_i log((max(H_v[i][b_i(u)], 0) + 1/2) /
//     (N_i[b_i(u)] + 1/2)), where N_i[b] counts dictionary vertices in that
//     bucket, and guesses the top d-hat, d-hat being the degree the
//     histogram suggests (its mean per-bin total).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "nodefl/server/fedwalk/common/hct_transcript.h"

namespace nodefl::server::fedwalk {

using NeighbourGuesses = std::map<uint32_t, std::vector<uint32_t>>;  // device -> guessed neighbours (sorted)

NeighbourGuesses RecoverFromOrderedMatrices(const HctTranscript& transcript);
NeighbourGuesses RecoverFromHistograms(const HctTranscript& transcript);

// The baseline an attacker has WITHOUT the device's upload beyond its size:
// guess, for each attacked device, the d-hat vertices with the largest
// public degree estimate (dictionary row sums). Hubs neighbour many
// devices, so this beats a uniform guess by a wide margin on skewed graphs;
// a mode that protects edges should not let the attack do much better.
// d-hat is what the matching attack above would use (row count or
// histogram total per bin).
NeighbourGuesses RecoverByDegreePrior(const HctTranscript& transcript);

struct RecoveryScore {
  uint64_t devices = 0;          // devices attacked
  uint64_t guessed = 0;          // guesses made
  uint64_t correct = 0;          // guesses that are true neighbours
  uint64_t actual = 0;           // true neighbours of the attacked devices
  double precision = 0;          // correct / guessed
  double recall = 0;             // correct / actual
  // Precision (= recall when guessing as many as the true degree) a guess
  // of the same sizes drawn uniformly at random would have on average.
  double chance_precision = 0;
  double chance_recall = 0;
};

// `neighbours[v]` is the true sorted neighbour list of vertex v (only
// vertices in the dictionary count as possible neighbours).
RecoveryScore ScoreGuesses(const NeighbourGuesses& guesses, const HctTranscript& transcript,
                           const std::vector<std::vector<uint32_t>>& neighbours);

}  // namespace nodefl::server::fedwalk
