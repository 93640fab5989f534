// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/dissimilarity/dissimilarity.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/fedwalk/dissimilarity/histogram_emd.h"
#include "nodefl/server/fedwalk/dissimilarity/pair_chunks.h"

namespace nodefl::server::fedwalk {
namespace {

// Chunks per thread: enough that the last chunks to finish are a small
// fraction of any thread's share (~0.4%), few enough that taking one from
// the shared counter costs nothing measurable.
constexpr uint64_t kChunksPerThread = 256;
constexpr auto kProgressInterval = std::chrono::milliseconds(500);

void ComputeChunk(const FeatureStore& features, const PairChunk& chunk, DtwWorkspace& workspace,
                  float* out) {
  if (features.kind() == FeatureStore::Kind::kOrderedMatrices) {
    const OrderedMatrixView row = features.matrix(chunk.row);
    for (uint32_t j = chunk.first; j < chunk.end; ++j) {
      *out++ = static_cast<float>(DtwL1(row, features.matrix(j), workspace));
    }
  } else {
    const int32_t* row = features.histogram(chunk.row);
    for (uint32_t j = chunk.first; j < chunk.end; ++j) {
      *out++ = static_cast<float>(
          HistogramEmd(row, features.histogram(j), features.bins(), features.buckets()));
    }
  }
}

}  // namespace

double PairDissimilarity(const FeatureStore& features, uint32_t u, uint32_t v, DtwWorkspace& workspace) {
  if (features.kind() == FeatureStore::Kind::kOrderedMatrices) {
    return DtwL1(features.matrix(u), features.matrix(v), workspace);
  }
  return HistogramEmd(features.histogram(u), features.histogram(v), features.bins(),
                                       features.buckets());
}

uint64_t DissimilarityWorkCells(const FeatureStore& features) {
  const uint64_t n = features.size();
  if (features.kind() == FeatureStore::Kind::kHistograms) {
    return CondensedMatrix::Size(features.size()) * features.bins() * features.buckets();
  }
  // Sum over i < j of rows_i * rows_j, via suffix sums (no (sum)^2 overflow).
  uint64_t cells = 0;
  uint64_t suffix = 0;
  for (uint64_t i = n; i-- > 0;) {
    cells += uint64_t{features.rows(static_cast<uint32_t>(i))} * suffix;
    suffix += features.rows(static_cast<uint32_t>(i));
  }
  return cells;
}

CondensedMatrix ComputeDissimilarities(const FeatureStore& features, unsigned threads,
                                       const DissimilarityProgress& progress) {
  const uint32_t n = features.size();
  CondensedMatrix result(n);
  const uint64_t total_pairs = CondensedMatrix::Size(n);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());

  std::vector<uint32_t> sizes(n);
  for (uint32_t v = 0; v < n; ++v) sizes[v] = features.rows(v);
  const std::vector<PairChunk> chunks = SplitPairs(sizes, uint64_t{threads} * kChunksPerThread);
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(1, chunks.size())));

  std::atomic<size_t> next_chunk{0};
  std::atomic<uint64_t> done_pairs{0};
  std::mutex mutex;
  std::condition_variable finished;
  unsigned running = threads;

  auto worker = [&] {
    DtwWorkspace workspace;
    for (;;) {
      const size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks.size()) break;
      const PairChunk& chunk = chunks[c];
      // Distinct chunks write distinct elements: no synchronisation needed
      // beyond the joins below.
      ComputeChunk(features, chunk, workspace, result.values().data() + result.Index(chunk.row, chunk.first));
      done_pairs.fetch_add(chunk.end - chunk.first, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (--running == 0) finished.notify_all();
  };

  {
    // jthreads join on destruction, also if starting a later one throws.
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, kProgressInterval, [&] { return running == 0; })) {
      if (progress) {
        lock.unlock();
        progress(done_pairs.load(std::memory_order_relaxed), total_pairs);
        lock.lock();
      }
    }
  }
  if (progress) progress(total_pairs, total_pairs);
  return result;
}

}  // namespace nodefl::server::fedwalk
