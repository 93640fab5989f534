// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ForChunks: items 0 .. count-1 handed out in chunks to `threads` workers
// (the caller is worker 0) through one atomic cursor, so a few heavy items
// (hubs) do not leave the other workers idle. Work is split by item, never
// by arrival: whatever a worker computes for an item must not depend on
// which worker took it (the simulation's results do not depend on the
// thread count).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace nodefl::server::fedwalk::walk_sim {

// fn(worker, begin, end) for disjoint ranges covering 0 .. count-1.
template <class Fn>
void ForChunks(size_t count, size_t chunk, unsigned threads, const Fn& fn) {
  if (count == 0) return;
  chunk = std::max<size_t>(chunk, 1);
  const unsigned workers = static_cast<unsigned>(
      std::clamp<size_t>((count + chunk - 1) / chunk, 1, std::max(1u, threads)));
  std::atomic<size_t> cursor{0};
  auto run = [&](unsigned worker) {
    for (;;) {
      const size_t begin = cursor.fetch_add(chunk);
      if (begin >= count) return;
      fn(worker, begin, std::min(count, begin + chunk));
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (std::thread& t : pool) t.join();
}

}  // namespace nodefl::server::fedwalk::walk_sim
