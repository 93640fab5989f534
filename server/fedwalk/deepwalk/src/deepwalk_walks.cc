// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/deepwalk/deepwalk_walks.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/parallel_progress.h"

namespace nodefl::server::fedwalk {

namespace {

// Separate stream families under the user seed for the per-round orders and
// the walks, so neither can repeat the other's numbers.
constexpr uint64_t kOrderFamily = 0x6F72646572ull;  // "order"
constexpr uint64_t kWalkFamily = 0x77616C6Bull;     // "walk"

// Walks a worker does between progress-counter updates.
constexpr size_t kWalksPerUpdate = 4096;

}  // namespace

std::optional<WalkCorpus> GenerateDeepWalks(const nodefl::dataset::Graph& graph, const DeepWalkOptions& options,
                                            const WalkProgress& progress, std::string* error) {
  auto fail = [error](std::string message) -> std::optional<WalkCorpus> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  if (options.walks_per_vertex < 1 || options.walk_length < 1) {
    return fail("walks per vertex and walk length must be at least 1");
  }
  if (options.threads > 1024) return fail("threads must be 0 (hardware threads) .. 1024");
  const uint32_t n = graph.num_nodes;
  if (graph.offsets.size() != size_t{n} + 1) return fail("the graph has no CSR adjacency");
  const uint64_t walks = uint64_t{n} * options.walks_per_vertex;
  // Tokens are bounded by walks * length; keep it far from overflow and
  // from an accidental multi-terabyte request.
  if (walks * options.walk_length > (uint64_t{1} << 40)) return fail("the walks would exceed 2^40 tokens");

  // Orders of all rounds, then the walk offsets: every non-isolated walk
  // has full length (in an undirected graph a walk can always continue), so
  // each walk's place is known before any walk is generated.
  std::vector<uint32_t> starts(walks);
  const uint64_t order_seed = StreamSeed(options.seed, kOrderFamily);
  for (uint32_t r = 0; r < options.walks_per_vertex; ++r) {
    const auto round = starts.begin() + static_cast<std::ptrdiff_t>(uint64_t{r} * n);
    std::iota(round, round + n, 0u);
    FastRng rng(StreamSeed(order_seed, r));
    for (uint32_t i = n; i > 1; --i) std::swap(round[i - 1], round[rng.Below(i)]);  // Fisher-Yates
  }
  std::vector<uint64_t> offsets(walks + 1, 0);
  for (uint64_t w = 0; w < walks; ++w) {
    offsets[w + 1] = offsets[w] + (graph.degree(starts[w]) == 0 ? 1 : options.walk_length);
  }
  std::vector<uint32_t> tokens(offsets.back());

  const unsigned threads = options.threads == 0 ? std::max(1u, std::thread::hardware_concurrency())
                                                : options.threads;
  const uint64_t walk_seed = StreamSeed(options.seed, kWalkFamily);
  std::atomic<uint64_t> done{0};
  auto work = [&](unsigned t) {
    const uint64_t first = walks * t / threads;
    const uint64_t last = walks * (t + 1) / threads;
    uint64_t pending = 0;
    for (uint64_t w = first; w < last; ++w) {
      FastRng rng(StreamSeed(walk_seed, w));
      uint32_t* out = tokens.data() + offsets[w];
      const uint64_t length = offsets[w + 1] - offsets[w];
      uint32_t v = starts[w];
      out[0] = v;
      for (uint64_t k = 1; k < length; ++k) {
        const uint64_t begin = graph.offsets[v];
        v = graph.neighbours[begin + rng.Below(static_cast<uint32_t>(graph.offsets[v + 1] - begin))];
        out[k] = v;
      }
      if (++pending == kWalksPerUpdate) {
        done.fetch_add(pending, std::memory_order_relaxed);
        pending = 0;
      }
    }
    done.fetch_add(pending, std::memory_order_relaxed);
  };
  RunWorkersWithProgress(threads, work, done, walks, progress);
  return WalkCorpus::FromCsr(n, std::move(tokens), std::move(offsets), error);
}

}  // namespace nodefl::server::fedwalk
