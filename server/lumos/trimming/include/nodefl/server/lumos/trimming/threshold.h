// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The exact trimming method the lumos-trim job runs (docs/lumos.md,
// "Draining to a public threshold"): the server publishes a threshold T;
// every device compares its own workload with T (a public number, so no
// secure comparison is needed), devices above T search along their kept
// edges for devices below T, and each path found is reversed, moving one
// kept edge's worth of work from the top of the path to its end. Drains at
// a sequence of thresholds (ThresholdSchedule) reach the optimum.
//
// This file holds the two plain parts: the schedule of thresholds (shared
// by the server's coordinator and the simulation) and a plaintext
// simulation of the device protocol, for evaluation and as the job's test
// oracle.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/server/lumos/trimming/trimming.h"

namespace nodefl::server::lumos {

// Which threshold the next drain uses. A drain at T ends either feasible
// (every device at or below T) or stuck (a device above T has no improving
// path to a device below T: then the devices reachable from it form a set
// denser than T, so the optimum exceeds T). The schedule doubles T from 1
// until a drain is feasible, then bisects between the highest stuck and the
// lowest feasible threshold (starting above a threshold known to be
// infeasible, when one is given). Drains never raise the maximum, so after the
// last drain the maximum workload is the lowest feasible threshold, which is
// the optimum (ceil of the maximum density).
class ThresholdSchedule {
 public:
  // `known_infeasible`: a threshold already known to be below the optimum
  // (e.g. ceil(|E|/|V|) - 1: the whole graph's density bounds the optimum
  // from below); 0 when nothing is known.
  explicit ThresholdSchedule(uint32_t known_infeasible = 0)
      : stuck_(known_infeasible), next_(known_infeasible == UINT32_MAX ? UINT32_MAX : known_infeasible + 1) {}
  // The threshold of the next drain.
  uint32_t threshold() const { return next_; }
  // The drain at threshold() ended; `feasible`: every device at or below it.
  void OnDrainEnded(bool feasible);
  // No threshold is left to try: optimum() is the lowest feasible one.
  bool done() const { return done_; }
  uint32_t optimum() const { return feasible_; }
  uint32_t drains() const { return drains_; }

 private:
  uint32_t stuck_ = 0;       // highest threshold known infeasible (0: none tried; T = 0 is infeasible
                             // for any graph with an edge, and an edgeless graph ends feasible at 1)
  uint32_t feasible_ = 0;    // lowest threshold known feasible (0: none yet)
  uint32_t next_ = 1;
  uint32_t drains_ = 0;
  bool done_ = false;
};

// The server side of the device protocol: which step runs next, at which
// threshold, from the devices' step outcomes (protocol/lumos/trim_format.h).
// A drain continues while some root is still above the threshold and some
// root was relieved in the last step; it ends feasible when no root is
// above it any more, and stuck when a step relieved no root.
class DrainController {
 public:
  explicit DrainController(uint32_t known_infeasible = 0) : schedule_(known_infeasible) {}

  bool done() const { return schedule_.done(); }
  uint32_t step() const { return step_; }  // 1, 2, ...: the step to run (or running)
  uint32_t threshold() const { return schedule_.threshold(); }
  const ThresholdSchedule& schedule() const { return schedule_; }

  // The current step is over. `still_over`: some root reported it is still
  // above the threshold, or some root did not report (a root that did not
  // answer may still be above it). `relief`: summed over the roots.
  void EndStep(bool still_over, uint64_t relief);

 private:
  ThresholdSchedule schedule_;
  uint32_t step_ = 1;
};

struct ThresholdOptions {
  uint64_t seed = 1;             // order in which searches and reversals race
  bool check_invariant = false;  // after every round (tests)
  uint32_t max_rounds = 1u << 20;  // a safety net; the method always terminates before
  // Passed to the schedule (the job passes ceil(|E| / |V|) - 1, see
  // KnownInfeasible()).
  uint32_t known_infeasible = 0;
  // A sink (a device below T) accepts every search that reaches it while it
  // stays below T, not only its first (the device role does; false only to
  // measure what that buys: 2-6 times fewer steps on the shared datasets).
  bool multi_accept = true;
};

// ceil(|E| / |V|) - 1: the whole graph has density |E| / |V|, so no
// orientation has a maximum below ceil(|E| / |V|). 0 for an empty graph.
uint32_t KnownInfeasible(uint64_t edges, uint64_t vertices);

struct ThresholdRound {
  uint32_t threshold = 0;
  uint32_t roots = 0;          // devices above the threshold at the round start
  uint32_t reached = 0;        // devices a search reached (roots excluded)
  uint64_t messages = 0;       // searches and their echoes
  uint32_t reversals = 0;      // reversed paths (each ends at a root or at a relay)
  uint32_t root_relief = 0;    // reversals that reached a root
  uint32_t longest_path = 0;   // edges
  uint32_t depth = 0;          // the longest search chain, in edges (latency in hops)
  uint32_t max_after = 0;
  bool still_over = false;     // some device above the threshold after the round
};

struct ThresholdStats {
  std::vector<ThresholdRound> rounds;
  std::vector<uint32_t> thresholds;  // one per drain, in order
  uint64_t messages = 0;
  uint64_t reversals = 0;
  double seconds = 0;
};

// From `start` (normally Greedy()): edges kept by both endpoints are first
// dropped by the lower-numbered endpoint (both learned the tie in Alg. 1);
// then drains at the schedule's thresholds, each a sequence of rounds until
// it is feasible or stuck. In a round every device above T is a root and
// sends a search to each kept neighbour; a device first reached (not a
// root) adopts the sender as its parent, and either accepts (workload below
// T: it keeps the parent's edge and answers with a reversal; later searches
// too while it stays below T) or passes the search on to its own kept
// neighbours; every search is answered (the echo that tells the sender its
// subtree is done). A device forwards at most one reversal to its parent;
// further ones stop at it.
Trimming Threshold(const Trimming& start, const ThresholdOptions& options = {}, ThresholdStats* stats = nullptr);

}  // namespace nodefl::server::lumos
