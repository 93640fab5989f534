// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One round of dropout-robust secure aggregation, the server's last step
// (Bonawitz et al., CCS'17; the sparse mask graph of Bell et al., CCS'20):
// from the masked vectors of the devices that reported, the round public
// key of every device, the mask graph (who masked with whom), and the
// shares the survivors revealed (for a reporter: shares of its self seed;
// for a device that dropped after masking: shares of its round secret,
// never both for one device), compute the reporters' sum mod 2^32:
//
//   sum = sum_{u reported} y_u - PRG(b_u)
//         - sum_{u reported, v dropped, (u, v) in the graph} sign(u, v) PRG(s_uv)
//
// with b_u and v's secret reconstructed (sdk/secagg shamir.h) and s_uv
// recomputed from v's secret and u's public key (round_keys.h). A device
// whose secret cannot be reconstructed (fewer than `threshold` valid
// shares) aborts the round: nothing is unmasked and the error says whose.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nodefl/random/drbg.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"

namespace nodefl::server::secagg {

struct RoundView {
  // kCAGC Protocol 4 as written (paper mode): pair masks only, no self
  // masks and no shares, so nobody may drop: a round with a device that
  // masked and did not report aborts (its pair masks cannot be removed).
  bool paper = false;
  uint64_t round = 0;
  uint32_t threshold = 0;                                // shares needed per secret
  size_t length = 0;                                     // words per vector
  std::map<uint32_t, std::vector<uint8_t>> public_keys;  // every device that masked
  std::map<uint32_t, std::vector<uint32_t>> peers;       // the mask graph, symmetric
  std::map<uint32_t, std::vector<uint32_t>> masked;      // the reporters' vectors
  // Instead of `masked` (n x length words): the reporters' masked vectors
  // already summed mod 2^32 (length words), and who they are. Used when
  // `reporters` is not empty; `masked` must then be empty. Unmask only ever
  // needs their sum, so a caller can fold each vector in as it arrives
  // (AggregationService's UploadMemory::kRunningSum).
  std::vector<uint32_t> masked_sum;
  std::vector<uint32_t> reporters;
  std::map<uint32_t, std::vector<nodefl::secagg::Share>> self_seed_shares;  // per reporter
  std::map<uint32_t, std::vector<nodefl::secagg::Share>> secret_shares;     // per dropped device
};

struct RoundResult {
  std::vector<uint32_t> sum;       // mod 2^32; decode with DecodeFixedPointSum
  std::vector<uint32_t> included;  // the reporters
  std::vector<uint32_t> dropped;   // masked, then did not report
  std::string error;               // set when the round aborted (sum empty)
  bool ok() const { return error.empty(); }
};

// `random` blinds the scalar multiplications of the seed recomputation.
RoundResult Unmask(const RoundView& view, Drbg& random);

}  // namespace nodefl::server::secagg
