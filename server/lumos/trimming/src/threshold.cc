// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/trimming/threshold.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>

namespace nodefl::server::lumos {

void ThresholdSchedule::OnDrainEnded(bool feasible) {
  if (done_) return;
  ++drains_;
  if (feasible) {
    feasible_ = next_;
  } else {
    stuck_ = next_;
  }
  if (feasible_ == 0) {
    // Still looking for a feasible threshold: double. A stuck drain at T
    // proves the optimum is above T, so 2T is never below it by more than
    // a factor of two.
    next_ = next_ > (UINT32_MAX / 2) ? UINT32_MAX : next_ * 2;
    return;
  }
  if (feasible_ <= stuck_ + 1) {
    done_ = true;
    return;
  }
  next_ = stuck_ + (feasible_ - stuck_) / 2;
}

uint32_t KnownInfeasible(uint64_t edges, uint64_t vertices) {
  if (vertices == 0 || edges == 0) return 0;
  const uint64_t ceil = (edges + vertices - 1) / vertices;
  return static_cast<uint32_t>(std::min<uint64_t>(ceil - 1, UINT32_MAX - 1));
}

void DrainController::EndStep(bool still_over, uint64_t relief) {
  ++step_;
  if (!still_over) {
    schedule_.OnDrainEnded(true);
  } else if (relief == 0) {
    schedule_.OnDrainEnded(false);
  }
}

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Trimming Threshold(const Trimming& start, const ThresholdOptions& options, ThresholdStats* stats) {
  const auto clock_start = Clock::now();
  ThresholdStats local;
  ThresholdStats& s = stats ? *stats : local;
  s = ThresholdStats{};
  Trimming t = start;
  const TrimGraph& g = t.graph();
  t.DropTiesByLowerEndpoint();
  const uint32_t n = g.num_vertices();
  std::mt19937_64 rng(options.seed);

  constexpr uint64_t kNone = UINT64_MAX;
  std::vector<uint64_t> parent_edge(n);
  std::vector<uint32_t> depth(n);
  std::vector<uint8_t> reached(n), forwarded(n);
  std::vector<uint32_t> order, queue, room(n);
  std::vector<std::pair<uint32_t, uint64_t>> accepts;  // (sink, edge it takes)
  order.reserve(n);

  ThresholdSchedule schedule(options.known_infeasible);
  while (!schedule.done()) {
    const uint32_t T = schedule.threshold();
    s.thresholds.push_back(T);
    bool feasible = false;
    for (;;) {
      if (s.rounds.size() >= options.max_rounds) throw std::logic_error("threshold: round limit reached");
      ThresholdRound r;
      r.threshold = T;
      std::fill(parent_edge.begin(), parent_edge.end(), kNone);
      std::fill(reached.begin(), reached.end(), 0);
      std::fill(forwarded.begin(), forwarded.end(), 0);
      std::fill(depth.begin(), depth.end(), 0);
      // Roots in a random order: the asynchronous protocol has no order.
      queue.clear();
      for (uint32_t v = 0; v < n; ++v) {
        if (t.workload(v) > T) queue.push_back(v);
      }
      std::shuffle(queue.begin(), queue.end(), rng);
      r.roots = static_cast<uint32_t>(queue.size());
      for (uint32_t v : queue) reached[v] = 1;
      accepts.clear();
      std::fill(room.begin(), room.end(), 0);
      // Breadth first over kept edges, frozen for the search: every
      // message goes from a device that keeps the edge to the one it keeps.
      for (size_t head = 0; head < queue.size(); ++head) {
        const uint32_t x = queue[head];
        order.assign(g.incident(x).begin(), g.incident(x).end());
        std::shuffle(order.begin(), order.end(), rng);
        for (uint64_t e : order) {
          if (!t.keeps(x, e)) continue;
          const uint32_t y = g.other(e, x);
          r.messages += 2;  // the search and its echo
          if (reached[y]) {
            // A sink with room left takes this edge too (multi-accept).
            if (options.multi_accept && room[y] > 0) {
              --room[y];
              accepts.push_back({y, e});
            }
            continue;
          }
          reached[y] = 1;
          parent_edge[y] = e;
          depth[y] = depth[x] + 1;
          r.depth = std::max(r.depth, depth[y]);
          ++r.reached;
          if (t.workload(y) < T) {
            room[y] = T - t.workload(y) - 1;
            accepts.push_back({y, e});
          } else {
            queue.push_back(y);
          }
        }
      }
      // Reversals climb from the sinks; a device passes on only the first.
      std::shuffle(accepts.begin(), accepts.end(), rng);
      for (const auto& [sink, first_edge] : accepts) {
        uint32_t y = sink;
        uint64_t e = first_edge;
        uint32_t length = 0;
        for (;;) {
          const uint32_t x = g.other(e, y);
          t.MoveAway(x, e);  // y keeps the edge, then x drops it
          ++length;
          if (parent_edge[x] == kNone) {  // a root
            ++r.root_relief;
            break;
          }
          if (forwarded[x]) break;  // x's workload falls by one
          forwarded[x] = 1;
          y = x;
          e = parent_edge[x];
        }
        ++r.reversals;
        r.longest_path = std::max(r.longest_path, length);
      }
      if (options.check_invariant) {
        const std::string bad = t.CheckInvariant(true);
        if (!bad.empty()) throw std::logic_error("threshold round " + std::to_string(s.rounds.size()) + ": " + bad);
      }
      r.max_after = t.max_workload();
      r.still_over = r.max_after > T;
      s.messages += r.messages;
      s.reversals += r.reversals;
      s.rounds.push_back(r);
      if (!r.still_over) {
        feasible = true;
        break;
      }
      if (r.root_relief == 0) break;  // stuck
    }
    schedule.OnDrainEnded(feasible);
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - clock_start).count();
  return t;
}

}  // namespace nodefl::server::lumos
