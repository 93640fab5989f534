// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/trimming/trimming.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

namespace nodefl::server::lumos {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Our own draws from a fixed engine, so a seed gives the same run with any
// standard library (the std:: distributions are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1) with 53 random bits.
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n > 0, without modulo bias (rejection).
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = engine_();
    while (x >= limit);
    return x % n;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

TrimGraph::TrimGraph(uint32_t num_vertices, const std::vector<std::pair<uint32_t, uint32_t>>& edges)
    : incident_(num_vertices) {
  std::set<std::pair<uint32_t, uint32_t>> seen;
  a_.reserve(edges.size());
  b_.reserve(edges.size());
  for (auto [u, v] : edges) {
    if (u >= num_vertices || v >= num_vertices) {
      error_ = "edge " + std::to_string(u) + "-" + std::to_string(v) + " names a vertex >= " + std::to_string(num_vertices);
      return;
    }
    if (u == v) {
      error_ = "self loop at " + std::to_string(u);
      return;
    }
    if (u > v) std::swap(u, v);
    if (!seen.insert({u, v}).second) {
      error_ = "duplicate edge " + std::to_string(u) + "-" + std::to_string(v);
      return;
    }
    incident_[u].push_back(a_.size());
    incident_[v].push_back(a_.size());
    a_.push_back(u);
    b_.push_back(v);
  }
}

Trimming::Trimming(const TrimGraph& g) : g_(&g), keep_(g.num_edges(), Keeper::kA), wl_(g.num_vertices(), 0) {
  for (uint64_t e = 0; e < g.num_edges(); ++e) ++wl_[g.a(e)];
}

bool Trimming::keeps(uint32_t v, uint64_t e) const {
  const Keeper k = keep_[e];
  if (k == Keeper::kBoth) return true;
  return (k == Keeper::kA) == (g_->a(e) == v);
}

uint32_t Trimming::max_workload() const {
  return wl_.empty() ? 0 : *std::max_element(wl_.begin(), wl_.end());
}

double Trimming::mean_workload() const {
  if (wl_.empty()) return 0;
  return static_cast<double>(std::accumulate(wl_.begin(), wl_.end(), uint64_t{0})) / static_cast<double>(wl_.size());
}

uint64_t Trimming::edges_kept_twice() const {
  return static_cast<uint64_t>(std::count(keep_.begin(), keep_.end(), Keeper::kBoth));
}

void Trimming::Set(uint64_t e, Keeper k) {
  const Keeper old = keep_[e];
  if (old != Keeper::kB) --wl_[g_->a(e)];
  if (old != Keeper::kA) --wl_[g_->b(e)];
  keep_[e] = k;
  if (k != Keeper::kB) ++wl_[g_->a(e)];
  if (k != Keeper::kA) ++wl_[g_->b(e)];
}

void Trimming::MoveAway(uint32_t u, uint64_t e) {
  if (!keeps(u, e)) throw std::logic_error("MoveAway: vertex does not keep the edge");
  Set(e, g_->a(e) == u ? Keeper::kB : Keeper::kA);
}

void Trimming::DropTiesByLowerEndpoint() {
  for (uint64_t e = 0; e < keep_.size(); ++e) {
    if (keep_[e] == Keeper::kBoth) Set(e, Keeper::kB);  // a < b: a drops it
  }
}

std::string Trimming::CheckInvariant(bool exactly_once) const {
  std::vector<uint32_t> count(g_->num_vertices(), 0);
  for (uint64_t e = 0; e < g_->num_edges(); ++e) {
    const Keeper k = keep_[e];
    if (k != Keeper::kA && k != Keeper::kB && k != Keeper::kBoth) return "edge " + std::to_string(e) + " kept by nobody";
    if (exactly_once && k == Keeper::kBoth) return "edge " + std::to_string(e) + " kept by both endpoints";
    if (k != Keeper::kB) ++count[g_->a(e)];
    if (k != Keeper::kA) ++count[g_->b(e)];
  }
  for (uint32_t v = 0; v < g_->num_vertices(); ++v) {
    if (count[v] != wl_[v]) return "workload of " + std::to_string(v) + " is stale";
  }
  return "";
}

uint32_t LogDegree(uint32_t degree) {
  if (degree <= 1) return 0;
  return static_cast<uint32_t>(std::lround(std::log(static_cast<double>(degree))));
}

Trimming Greedy(const TrimGraph& g, MethodStats* stats) {
  const auto start = Clock::now();
  Trimming t(g);
  for (uint64_t e = 0; e < g.num_edges(); ++e) {
    // Alg. 1 line 4, one secure comparison per edge answering both endpoints:
    // a keeps b iff ld(b) >= ld(a); b keeps a iff ld(a) >= ld(b).
    const uint32_t la = LogDegree(g.degree(g.a(e)));
    const uint32_t lb = LogDegree(g.degree(g.b(e)));
    t.Set(e, la == lb ? Keeper::kBoth : (lb > la ? Keeper::kA : Keeper::kB));
  }
  if (stats) {
    *stats = MethodStats{};
    stats->comparisons = g.num_edges();
    stats->seconds = SecondsSince(start);
  }
  return t;
}

// Lumos Alg. 3 on plaintext workloads. Device operation 1: each device
// compares its workload with each neighbour's; one two-party comparison per
// edge tells both ends, so |E| comparisons. A device is a candidate when no
// neighbour has more (">=": "the largest workloads among their neighbors and
// themselves"), so neighbours that tie at a local maximum are both
// candidates. Operation 2: the candidates compare pairwise, C(|CVS|, 2)
// comparisons; the server picks uniformly among the candidates that are
// largest (Alg. 3 footnote).
CandidateVertexSet FindCandidateVertexSet(const Trimming& t) {
  const TrimGraph& g = t.graph();
  std::vector<uint8_t> candidate(g.num_vertices(), 1);
  for (uint64_t e = 0; e < g.num_edges(); ++e) {
    const uint32_t wa = t.workload(g.a(e)), wb = t.workload(g.b(e));
    if (wa < wb) candidate[g.a(e)] = 0;
    if (wb < wa) candidate[g.b(e)] = 0;
  }
  CandidateVertexSet out;
  uint32_t best = 0;
  for (uint32_t v = 0; v < g.num_vertices(); ++v) {
    if (!candidate[v]) continue;
    out.candidates.push_back(v);
    if (out.largest.empty() || t.workload(v) > best) {
      best = t.workload(v);
      out.largest.clear();
    }
    if (t.workload(v) == best) out.largest.push_back(v);
  }
  const uint64_t n = out.candidates.size();
  out.comparisons = g.num_edges() + n * (n - 1) / 2;
  return out;
}

namespace {

// Alg. 3: the device the server names as holding the maximum.
uint32_t FindMaxWorkloadDevice(const Trimming& t, Rng& rng, uint64_t* comparisons) {
  const CandidateVertexSet cvs = FindCandidateVertexSet(t);
  *comparisons += cvs.comparisons;
  return cvs.largest.size() == 1 ? cvs.largest[0] : cvs.largest[rng.Below(cvs.largest.size())];
}

}  // namespace

// Lumos Alg. 2, "paper" mode. Readings taken where the text is ambiguous or
// defective (Lumos Sec. V-C b):
//  - f is the objective of Eq. 10, the maximum workload; line 7's
//    f(X_t) - f(X'_t) is wl(u) under X_t minus wl(u') under X'_t.
//  - Line 3 / Eq. 17: k is uniform in 1..round(ln |N_u|); that range is
//    empty when |N_u| = 1 (round(ln 1) = 0), where we take k = 1. The k
//    vertices are distinct and uniform over N_u. If u keeps nothing the
//    iteration does nothing (counted in `skipped`).
//  - Eq. 16 on an edge u and v both keep (a greedy tie) leaves it with v
//    only: N_v ∪ {u} changes nothing.
//  - Eq. 18 is applied as written, although the proposal always starts at
//    the maximum-workload device and so is not symmetric: without a Hastings
//    ratio the chain does not have the stationary distribution Lumos
//    Theorem 2 assumes (whose Eq. 21 also weights states by e^{+f}, favouring
//    worse ones). Equal maxima are always accepted, so the chain wanders on
//    plateaus; a worse maximum (delta = +1, the only increase possible: u
//    drops by k, each v_i gains at most one) is accepted with e^{-1}.
//  - Both line 2 and line 6 run Alg. 3 (the paper does not reuse line 6's
//    answer in the next iteration), and line 7 is one secure computation.
Trimming Mcmc(const Trimming& start, const McmcOptions& options, McmcStats* stats) {
  const auto clock_start = Clock::now();
  McmcStats local;
  McmcStats& s = stats ? *stats : local;
  s = McmcStats{};
  Trimming x = start;
  const TrimGraph& g = x.graph();
  Rng rng(options.seed);
  std::vector<uint64_t> kept;
  std::vector<std::pair<uint64_t, Keeper>> undo;
  for (uint64_t t = 1; t <= options.iterations; ++t) {
    ++s.iterations;
    const uint32_t u = FindMaxWorkloadDevice(x, rng, &s.comparisons);  // line 2
    const uint32_t f = x.workload(u);
    kept.clear();
    for (uint64_t e : g.incident(u)) {
      if (x.keeps(u, e)) kept.push_back(e);
    }
    if (kept.empty()) {
      ++s.skipped;
    } else {
      const uint64_t n = kept.size();
      const uint64_t hi = std::max<uint64_t>(1, static_cast<uint64_t>(std::lround(std::log(static_cast<double>(n)))));
      const uint64_t k = std::min<uint64_t>(n, 1 + rng.Below(hi));  // line 3
      undo.clear();
      for (uint64_t i = 0; i < k; ++i) {  // line 4: partial Fisher-Yates
        std::swap(kept[i], kept[i + rng.Below(n - i)]);
        undo.push_back({kept[i], x.keeper(kept[i])});
        x.MoveAway(u, kept[i]);  // line 5, Eq. 17
      }
      const uint32_t u2 = FindMaxWorkloadDevice(x, rng, &s.comparisons);  // line 6
      const int64_t delta = static_cast<int64_t>(x.workload(u2)) - static_cast<int64_t>(f);
      s.comparisons += 1;  // line 7
      Acceptance& a = s.by_delta[delta];
      ++a.proposed;
      // Line 8, Eq. 18: accept with min(1, e^{f(X_t) - f(X'_t)}).
      const bool accept = delta <= 0 || rng.Unit() < std::exp(-static_cast<double>(delta));
      if (accept) {
        ++a.accepted;
        ++s.moves;
      } else {
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) x.Set(it->first, it->second);
      }
    }
    if (options.check_invariant) {
      const std::string bad = x.CheckInvariant(false);
      if (!bad.empty()) throw std::logic_error("MCMC iteration " + std::to_string(t) + ": " + bad);
    }
    if (options.progress && options.progress_every && t % options.progress_every == 0) {
      options.progress(options.progress_ctx, t, x.max_workload());
    }
  }
  s.seconds = SecondsSince(clock_start);
  return x;
}

// Path reversal, level by level. At level M (the current maximum) every
// vertex at M is found (|V| - 1 comparisons for the maximum, |V| to mark who
// equals it), then from each a BFS over kept edges (u -> v when u keeps
// {u, v}) looks for a vertex with load <= M - 2, one comparison per vertex
// reached; reversing the path moves one unit of load from the source to the
// end and changes no load in between, so no vertex climbs to M and the level
// ends at M - 1. When a BFS from a vertex s at M fails, the set R it reached
// is closed (every edge an R vertex keeps ends in R) and every load in R is
// >= M - 1 with s at M, so |E(R)| >= sum of loads over R > (M - 1)|R|: the
// density of R exceeds M - 1 and no orientation has a maximum below M.
Trimming Exact(const Trimming& start, const ExactOptions& options, MethodStats* stats) {
  const auto clock_start = Clock::now();
  MethodStats local;
  MethodStats& s = stats ? *stats : local;
  s = MethodStats{};
  Trimming x = start;
  const TrimGraph& g = x.graph();
  for (uint64_t e = 0; e < g.num_edges(); ++e) {
    if (x.keeper(e) == Keeper::kBoth) x.Set(e, Keeper::kA);
  }
  const uint32_t n = g.num_vertices();
  std::vector<uint64_t> stamp(n, 0), parent_edge(n, 0);
  std::vector<uint32_t> queue;
  uint64_t generation = 0;
  bool optimal = n == 0;
  while (!optimal) {
    const uint32_t m = x.max_workload();
    s.comparisons += 2 * static_cast<uint64_t>(n) - 1;
    if (options.progress) options.progress(options.progress_ctx, m, s.moves);
    std::vector<uint32_t> level;
    for (uint32_t v = 0; v < n; ++v) {
      if (x.workload(v) == m) level.push_back(v);
    }
    for (uint32_t source : level) {
      ++s.iterations;
      ++generation;
      queue.assign(1, source);
      stamp[source] = generation;
      bool found = false;
      uint32_t end = source;
      for (size_t head = 0; head < queue.size() && !found; ++head) {
        const uint32_t u = queue[head];
        for (uint64_t e : g.incident(u)) {
          if (!x.keeps(u, e)) continue;
          const uint32_t v = g.other(e, u);
          if (stamp[v] == generation) continue;
          stamp[v] = generation;
          parent_edge[v] = e;
          ++s.comparisons;
          if (m >= 2 && x.workload(v) <= m - 2) {
            found = true;
            end = v;
            break;
          }
          queue.push_back(v);
        }
      }
      if (!found) {
        optimal = true;
        break;
      }
      for (uint32_t v = end; v != source;) {
        const uint64_t e = parent_edge[v];
        const uint32_t u = g.other(e, v);
        x.MoveAway(u, e);
        v = u;
      }
      ++s.moves;
      if (options.check_invariant) {
        const std::string bad = x.CheckInvariant(true);
        if (!bad.empty()) throw std::logic_error("exact reversal " + std::to_string(s.moves) + ": " + bad);
      }
    }
  }
  s.seconds = SecondsSince(clock_start);
  return x;
}


namespace {

uint64_t Potential(const Trimming& t) {
  uint64_t sum = 0;
  for (uint32_t w : t.workloads()) sum += static_cast<uint64_t>(w) * w;
  return sum;
}

}  // namespace

// docs/lumos.md, "The exact method, round by round". Every decision in a
// round reads the frozen copies `w` and `x` (the state at the round start),
// as devices only learn comparison results computed from their inputs at the
// start; the changes are applied to `next` at the end of the round.
//  - Local round: device s compares wl(v) + 2 <= wl(s) for each edge it
//    keeps, offers one true edge (uniform), and each v accepts the first
//    offer in a random arrival order. Each device gives and takes at most one
//    edge, so the accepted edges form chains whose frozen workloads fall by
//    >= 2 per hop: no cycle, and each chain lowers sum wl^2 by >= 2.
//  - Search round (only after a local round that moved nothing): every s
//    that keeps edges runs a BFS over kept edges up to the depth bound and
//    compares each vertex t it reaches with itself (wl(t) + 2 <= wl(s)),
//    stopping at the first hit. The server reverses vertex-disjoint paths,
//    greedily in random order, so loads change only at path ends.
//  - Stop after a search round that found nothing. With an unbounded depth
//    no improving path is then left anywhere, so the orientation is optimal.
Trimming Rounds(const Trimming& start, const RoundsOptions& options, RoundsStats* stats) {
  const auto clock_start = Clock::now();
  RoundsStats local;
  RoundsStats& s = stats ? *stats : local;
  s = RoundsStats{};
  Trimming next = start;
  const TrimGraph& g = next.graph();
  next.DropTiesByLowerEndpoint();
  Rng rng(options.seed);
  const uint32_t n = g.num_vertices();
  const auto record = [&](uint64_t moved, bool search) {
    s.max_by_round.push_back(next.max_workload());
    s.potential_by_round.push_back(Potential(next));
    s.moved_by_round.push_back(moved);
    s.search_round.push_back(search ? 1 : 0);
    if (options.check_invariant) {
      const std::string bad = next.CheckInvariant(true);
      if (!bad.empty()) throw std::logic_error("round " + std::to_string(s.max_by_round.size() - 1) + ": " + bad);
    }
  };
  s.max_by_round.push_back(next.max_workload());
  s.potential_by_round.push_back(Potential(next));
  s.moved_by_round.push_back(0);

  std::vector<uint64_t> hits;
  std::vector<std::pair<uint32_t, uint64_t>> offers;  // (sender, edge)
  std::vector<uint8_t> accepted(n), used(n);
  std::vector<uint64_t> stamp(n, 0), parent_edge(n, 0);
  std::vector<uint32_t> depth(n, 0), queue;
  std::vector<std::vector<uint64_t>> paths;  // edges, from the end back to the source
  uint64_t generation = 0;
  while (true) {
    // Local round.
    const Trimming x = next;
    const std::vector<uint32_t>& w = x.workloads();
    offers.clear();
    for (uint32_t u = 0; u < n; ++u) {
      hits.clear();
      for (uint64_t e : g.incident(u)) {
        if (!x.keeps(u, e)) continue;
        ++s.local_comparisons;
        if (w[g.other(e, u)] + 2 <= w[u]) hits.push_back(e);
      }
      if (!hits.empty()) offers.push_back({u, hits[rng.Below(hits.size())]});
    }
    s.offers += offers.size();
    for (size_t i = offers.size(); i > 1; --i) std::swap(offers[i - 1], offers[rng.Below(i)]);  // arrival order
    std::fill(accepted.begin(), accepted.end(), 0);
    uint64_t moved = 0;
    for (auto [u, e] : offers) {
      const uint32_t v = g.other(e, u);
      if (accepted[v]) continue;
      accepted[v] = 1;
      next.MoveAway(u, e);
      ++moved;
    }
    ++s.local_rounds;
    s.transfers += moved;
    record(moved, false);
    if (moved > 0) continue;

    // Search round on the same frozen state (nothing moved).
    paths.clear();
    for (uint32_t src = 0; src < n; ++src) {
      ++generation;
      queue.assign(1, src);
      stamp[src] = generation;
      depth[src] = 0;
      bool found = false;
      for (size_t head = 0; head < queue.size() && !found; ++head) {
        const uint32_t u = queue[head];
        if (options.search_depth && depth[u] >= options.search_depth) continue;
        for (uint64_t e : g.incident(u)) {
          if (!x.keeps(u, e)) continue;
          const uint32_t v = g.other(e, u);
          if (stamp[v] == generation) continue;
          stamp[v] = generation;
          parent_edge[v] = e;
          depth[v] = depth[u] + 1;
          ++s.search_comparisons;
          if (w[v] + 2 <= w[src]) {
            std::vector<uint64_t> path;
            for (uint32_t t = v; t != src; t = g.other(parent_edge[t], t)) path.push_back(parent_edge[t]);
            paths.push_back(std::move(path));
            found = true;
            break;
          }
          queue.push_back(v);
        }
      }
    }
    for (size_t i = paths.size(); i > 1; --i) std::swap(paths[i - 1], paths[rng.Below(i)]);
    std::fill(used.begin(), used.end(), 0);
    moved = 0;
    for (const std::vector<uint64_t>& path : paths) {
      bool free = true;
      for (uint64_t e : path) free = free && !used[g.a(e)] && !used[g.b(e)];
      if (!free) continue;
      for (uint64_t e : path) {
        used[g.a(e)] = used[g.b(e)] = 1;
        next.MoveAway(next.keeps(g.a(e), e) ? g.a(e) : g.b(e), e);
      }
      ++s.search_reversals;
      s.longest_search_path = std::max<uint64_t>(s.longest_search_path, path.size());
      moved += path.size();
    }
    ++s.search_rounds;
    record(moved, true);
    if (moved == 0) break;
  }
  s.seconds = SecondsSince(clock_start);
  return next;
}

}  // namespace nodefl::server::lumos
