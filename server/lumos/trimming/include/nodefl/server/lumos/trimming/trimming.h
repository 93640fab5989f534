// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Plaintext reference for Lumos tree trimming (Lumos Sec. V-B, V-C), for
// evaluation only: it sees the whole graph, which no party of the private
// protocol ever does. Every undirected edge {u, v} is kept by u (v is a leaf
// of u's tree), by v, or by both; wl(u) = number of edges u keeps, and the
// workload-balancing problem (Lumos Eq. 10) minimises max_u wl(u) subject to
// every edge being kept by at least one endpoint.
//
// Four methods:
//   Greedy()  Lumos Alg. 1 with the project's tie rule (the secure-compare
//             job's): u keeps v iff LogDegree(deg v) >= LogDegree(deg u), so
//             edges between equal log-degrees are kept by both endpoints.
//   Mcmc()    Lumos Alg. 2 with Eq. 17/18 and Alg. 3, as the paper states
//             them ("paper" mode), from a given start (normally Greedy()).
//   Exact()   the optimum. Eq. 10 is min-max graph orientation, not NP-hard
//             as Lumos Theorem 1 claims: the optimum is ceil(max over vertex
//             sets S of |E(S)|/|S|), reached by reversing paths from a
//             maximum-load vertex to one with load <= max - 2.
//   Rounds()  the same optimum the way docs/lumos.md designs it for devices:
//             rounds on frozen workloads, local offers, and path searches
//             only when a round moves nothing.
//
// Each method counts the comparisons it would need if every workload (or, in
// Alg. 1, log-degree) comparison were a secure two-party comparison.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nodefl::server::lumos {

// An undirected simple graph as an edge list (a < b) with each vertex's
// incident edge ids.
class TrimGraph {
 public:
  // Edges as given (each once, any order of endpoints); self loops and
  // duplicates are the caller's error (checked: Valid() false).
  TrimGraph(uint32_t num_vertices, const std::vector<std::pair<uint32_t, uint32_t>>& edges);

  uint32_t num_vertices() const { return static_cast<uint32_t>(incident_.size()); }
  uint64_t num_edges() const { return a_.size(); }
  uint32_t a(uint64_t e) const { return a_[e]; }
  uint32_t b(uint64_t e) const { return b_[e]; }
  uint32_t other(uint64_t e, uint32_t v) const { return a_[e] == v ? b_[e] : a_[e]; }
  uint32_t degree(uint32_t v) const { return static_cast<uint32_t>(incident_[v].size()); }
  const std::vector<uint64_t>& incident(uint32_t v) const { return incident_[v]; }
  bool valid() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::vector<uint32_t> a_, b_;
  std::vector<std::vector<uint64_t>> incident_;
  std::string error_;
};

// Who keeps each edge. kA/kB: only that endpoint; kBoth: both (only the
// greedy rule's ties produce it; no method creates one).
enum class Keeper : uint8_t { kA, kB, kBoth };

class Trimming {
 public:
  explicit Trimming(const TrimGraph& g);  // every edge kept by a

  const TrimGraph& graph() const { return *g_; }
  Keeper keeper(uint64_t e) const { return keep_[e]; }
  bool keeps(uint32_t v, uint64_t e) const;
  uint32_t workload(uint32_t v) const { return wl_[v]; }
  const std::vector<uint32_t>& workloads() const { return wl_; }
  uint32_t max_workload() const;
  double mean_workload() const;
  uint64_t edges_kept_twice() const;

  void Set(uint64_t e, Keeper k);
  // Eq. 16: u gives up edge e (which it keeps); the other endpoint keeps it
  // (already did if the edge was kept by both).
  void MoveAway(uint32_t u, uint64_t e);
  // Edges kept by both endpoints (greedy ties) are dropped by the lower
  // id, as the devices do before trimming (both learned the tie in Alg. 1).
  void DropTiesByLowerEndpoint();

  // "" when every edge is kept by at least one endpoint and every workload
  // equals the count of kept edges; with `exactly_once`, also no edge is kept
  // twice. Otherwise what is wrong.
  std::string CheckInvariant(bool exactly_once) const;

 private:
  const TrimGraph* g_;
  std::vector<Keeper> keep_;
  std::vector<uint32_t> wl_;
};

// The device-side rounding of Alg. 1 line 4, identical to the SDK's
// SecureCompareRole::LogDegree (0 for degree <= 1, else lround(ln degree));
// repeated here because server code never links a device role.
uint32_t LogDegree(uint32_t degree);

struct MethodStats {
  uint64_t comparisons = 0;  // secure comparisons the method would need
  uint64_t moves = 0;        // greedy: 0; MCMC: accepted iterations; exact: path reversals
  uint64_t iterations = 0;   // MCMC: iterations run; exact: BFS searches
  double seconds = 0;        // wall time
};

// Lumos Alg. 1: one log-degree comparison per edge.
Trimming Greedy(const TrimGraph& g, MethodStats* stats = nullptr);

enum class McmcMode {
  // The paper's literal Alg. 2: see Mcmc() in trimming.cc for where the text
  // is ambiguous or defective and which reading is taken.
  kPaper,
};

struct McmcOptions {
  McmcMode mode = McmcMode::kPaper;
  uint64_t iterations = 1000;
  uint64_t seed = 1;
  bool check_invariant = false;  // after every iteration (debug paths, tests)
  // Called every `progress_every` iterations (0: never) with the iteration.
  uint64_t progress_every = 0;
  void (*progress)(void* ctx, uint64_t iteration, uint32_t max_workload) = nullptr;
  void* progress_ctx = nullptr;
};

struct Acceptance {
  uint64_t proposed = 0;
  uint64_t accepted = 0;
};

struct McmcStats : MethodStats {
  // By delta = f(X'_t) - f(X_t): how often Eq. 18 was asked and said yes.
  std::map<int64_t, Acceptance> by_delta;
  uint64_t skipped = 0;  // iterations whose maximum-workload device kept nothing
};

// Lumos Alg. 3 (the candidate vertex set): the devices no neighbour
// exceeds (neighbours that tie at the top are both candidates), the
// candidates with the largest workload (the server picks one uniformly),
// and the comparisons it takes (one per edge, then every pair of
// candidates).
struct CandidateVertexSet {
  std::vector<uint32_t> candidates;  // ascending
  std::vector<uint32_t> largest;     // ascending
  uint64_t comparisons = 0;
};
CandidateVertexSet FindCandidateVertexSet(const Trimming& t);

// Lumos Alg. 2 from `start`.
Trimming Mcmc(const Trimming& start, const McmcOptions& options, McmcStats* stats = nullptr);

struct ExactOptions {
  bool check_invariant = false;  // after every reversal
  // Called once per workload level (the current maximum), for long runs.
  void (*progress)(void* ctx, uint32_t max_workload, uint64_t reversals) = nullptr;
  void* progress_ctx = nullptr;
};

// The optimum by path reversal, from `start` (edges kept twice are first
// given to the lower-numbered endpoint: a public rule, no comparison).
Trimming Exact(const Trimming& start, const ExactOptions& options = {}, MethodStats* stats = nullptr);


// The exact method the way docs/lumos.md designs it for devices, simulated
// in plaintext: rounds on workloads (and keepers) frozen at the round start,
// local offers along kept edges matched by the devices themselves, and
// breadth-first searches for longer improving paths only when a round moves
// nothing. Counts what the private version would pay.
struct RoundsOptions {
  uint32_t search_depth = 0;  // longest path a search follows, in edges; 0: unbounded
  uint64_t seed = 1;          // offers, arrival order of offers, order of found paths
  bool check_invariant = false;  // after every round (tests)
};

struct RoundsStats {
  uint64_t local_rounds = 0;
  uint64_t search_rounds = 0;  // including the last one, which finds nothing
  uint64_t local_comparisons = 0;   // one per kept edge per local round
  uint64_t search_comparisons = 0;  // one per vertex a search reaches
  uint64_t offers = 0;
  uint64_t transfers = 0;  // accepted offers
  uint64_t search_reversals = 0;
  uint64_t longest_search_path = 0;  // edges of the longest path a search round reversed
  // Index 0: after the tie drop; index r: after round r (local and search
  // rounds in the order they ran). Likewise the potential sum of wl^2, and
  // the edges moved in each round (transfers or reversed paths).
  std::vector<uint32_t> max_by_round;
  std::vector<uint64_t> potential_by_round;
  std::vector<uint64_t> moved_by_round;
  std::vector<uint8_t> search_round;  // per round (index r - 1): 1 for a search round
  double seconds = 0;
};

// From `start` (normally Greedy()): edges kept by both endpoints are first
// dropped by the lower-numbered endpoint, as both learned the tie in Alg. 1.
Trimming Rounds(const Trimming& start, const RoundsOptions& options = {}, RoundsStats* stats = nullptr);

}  // namespace nodefl::server::lumos
