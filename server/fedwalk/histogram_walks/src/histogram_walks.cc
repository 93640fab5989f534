// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/histogram_walks/histogram_walks.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"
#include "nodefl/server/fedwalk/skipgram/parallel_progress.h"

namespace nodefl::server::fedwalk {
namespace {

constexpr uint64_t kOrderFamily = 0x686f72646572ull;  // "horder"
constexpr uint64_t kWalkFamily = 0x6877616c6bull;     // "hwalk"
constexpr size_t kWalksPerUpdate = 4096;

// The sampling tables, built once and shared read-only by the workers.
struct Tables {
  // Bucket (c, s): the members w of cluster c with W[w][s] > 0 and their
  // cumulative weights; its total is B[c][s]. Keys c * C + s, sorted.
  std::vector<uint64_t> bucket_keys;
  std::vector<uint64_t> bucket_begin;  // size buckets + 1, into entry_*
  std::vector<uint32_t> entry_vertex;
  std::vector<double> entry_cumulative;  // within the bucket
  // Per vertex: its usable cells (cluster, cumulative step weight).
  std::vector<uint64_t> row_begin;  // size n + 1
  std::vector<uint16_t> row_cluster;
  std::vector<double> row_cumulative;

  // Bucket index of (c, s), or SIZE_MAX.
  size_t Bucket(uint64_t key) const {
    const auto it = std::lower_bound(bucket_keys.begin(), bucket_keys.end(), key);
    return it != bucket_keys.end() && *it == key ? static_cast<size_t>(it - bucket_keys.begin()) : SIZE_MAX;
  }
  double BucketTotal(size_t b) const { return entry_cumulative[bucket_begin[b + 1] - 1]; }
};

// Index of the first cumulative value above u (u in [0, total)), within
// [begin, end).
uint64_t Pick(const std::vector<double>& cumulative, uint64_t begin, uint64_t end, double u) {
  const auto first = cumulative.begin() + static_cast<std::ptrdiff_t>(begin);
  const auto last = cumulative.begin() + static_cast<std::ptrdiff_t>(end);
  const auto it = std::upper_bound(first, last, u);
  return it == last ? end - 1 : static_cast<uint64_t>(it - cumulative.begin());
}

Tables BuildTables(const ClusterHistograms& h, const HistogramWalkOptions& o, HistogramWalkStats* stats) {
  const uint32_t n = h.vertex_count();
  const uint64_t C = h.clusters();
  // A vertex cannot have more neighbours in a cluster than the cluster has
  // members (other than itself): larger values are noise, and clipping them
  // is post-processing. With one vertex per cluster this caps every cell at
  // 1 and drops the cell of the vertex's own cluster (no self-loops).
  auto weight = [&o, &h](uint32_t v, const HistogramCell& cell) {
    if (cell.count < o.min_count) return 0.0;
    const uint64_t room = h.members(cell.cluster).size() - (h.partition()[v] == cell.cluster ? 1 : 0);
    return static_cast<double>(std::min<uint64_t>(cell.count, room));
  };
  struct Entry {
    uint64_t key;
    uint32_t vertex;
    double weight;
  };
  std::vector<Entry> entries;
  for (uint32_t w = 0; w < n; ++w) {
    if (!h.present(w)) continue;
    const uint64_t c = h.partition()[w];
    for (const HistogramCell& cell : h.row(w)) {
      const double x = weight(w, cell);
      if (x > 0) entries.push_back(Entry{c * C + cell.cluster, w, x});
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.vertex < b.vertex; });
  Tables t;
  t.entry_vertex.resize(entries.size());
  t.entry_cumulative.resize(entries.size());
  double running = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i == 0 || entries[i].key != entries[i - 1].key) {
      t.bucket_keys.push_back(entries[i].key);
      t.bucket_begin.push_back(i);
      running = 0;
    }
    running += entries[i].weight;
    t.entry_vertex[i] = entries[i].vertex;
    t.entry_cumulative[i] = running;
  }
  t.bucket_begin.push_back(entries.size());

  t.row_begin.assign(size_t{n} + 1, 0);
  for (uint32_t v = 0; v < n; ++v) {
    t.row_begin[v + 1] = t.row_begin[v];
    if (!h.present(v)) continue;
    const uint64_t s = h.partition()[v];
    double cumulative = 0;
    for (const HistogramCell& cell : h.row(v)) {
      double x = weight(v, cell);
      if (x <= 0) continue;
      if (o.rule == HistogramWalkRule::kReciprocal) {
        // x * B[c][s] / B̄[c][s]. B[s][c] >= x > 0 (v itself is in s), so
        // the denominator is positive; B[c][s] = 0 removes the cell.
        const size_t toward_v = t.Bucket(uint64_t{cell.cluster} * C + s);
        const size_t from_v = t.Bucket(s * C + cell.cluster);
        const double b_cs = toward_v == SIZE_MAX ? 0.0 : t.BucketTotal(toward_v);
        const double b_sc = from_v == SIZE_MAX ? 0.0 : t.BucketTotal(from_v);
        x = b_cs > 0 ? x * 2 * b_cs / (b_cs + b_sc) : 0.0;
        if (x <= 0) continue;
      }
      cumulative += x;
      t.row_cluster.push_back(cell.cluster);
      t.row_cumulative.push_back(cumulative);
      ++t.row_begin[v + 1];
    }
  }
  if (stats != nullptr) {
    stats->weighted_cells = entries.size();
    stats->cluster_pairs = t.bucket_keys.size();
  }
  return t;
}

}  // namespace

std::optional<HistogramWalkRule> ParseHistogramWalkRule(const std::string& name) {
  if (name == "direct") return HistogramWalkRule::kDirect;
  if (name == "reciprocal") return HistogramWalkRule::kReciprocal;
  return std::nullopt;
}

const char* HistogramWalkRuleName(HistogramWalkRule rule) {
  return rule == HistogramWalkRule::kDirect ? "direct" : "reciprocal";
}

std::optional<WalkCorpus> GenerateHistogramWalks(const ClusterHistograms& h, const HistogramWalkOptions& o,
                                                 const HistogramWalkProgress& progress, HistogramWalkStats* stats,
                                                 std::string* error) {
  auto fail = [error](std::string message) -> std::optional<WalkCorpus> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  if (o.walks_per_vertex < 1 || o.walk_length < 1 || o.min_count < 1) {
    return fail("walks per vertex, walk length and min_count must be at least 1");
  }
  if (o.threads > 1024) return fail("threads must be 0 (hardware threads) .. 1024");
  std::vector<uint32_t> present;
  for (uint32_t v = 0; v < h.vertex_count(); ++v) {
    if (h.present(v)) present.push_back(v);
  }
  if (present.empty()) return fail("no vertex uploaded a histogram");
  const uint64_t walks = uint64_t{present.size()} * o.walks_per_vertex;
  if (walks * o.walk_length > (uint64_t{1} << 40)) return fail("the walks would exceed 2^40 tokens");

  HistogramWalkStats local;
  const Tables t = BuildTables(h, o, &local);
  const uint64_t C = h.clusters();

  std::vector<uint32_t> starts(walks);
  const uint64_t order_seed = StreamSeed(o.seed, kOrderFamily);
  for (uint32_t r = 0; r < o.walks_per_vertex; ++r) {
    const auto round = starts.begin() + static_cast<std::ptrdiff_t>(uint64_t{r} * present.size());
    std::copy(present.begin(), present.end(), round);
    FastRng rng(StreamSeed(order_seed, r));
    for (size_t i = present.size(); i > 1; --i) std::swap(round[i - 1], round[rng.Below(static_cast<uint32_t>(i))]);
  }

  // Each walk gets a full-length slot; dead ends are compacted afterwards.
  std::vector<uint32_t> slots(walks * o.walk_length);
  std::vector<uint32_t> lengths(walks);
  const unsigned threads = o.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : o.threads;
  const uint64_t walk_seed = StreamSeed(o.seed, kWalkFamily);
  std::atomic<uint64_t> done{0}, fallbacks{0};
  auto work = [&](unsigned worker) {
    const uint64_t first = walks * worker / threads;
    const uint64_t last = walks * (worker + 1) / threads;
    uint64_t pending = 0, fallback = 0;
    for (uint64_t i = first; i < last; ++i) {
      FastRng rng(StreamSeed(walk_seed, i));
      uint32_t* out = slots.data() + i * o.walk_length;
      uint32_t v = starts[i];
      out[0] = v;
      uint32_t k = 1;
      for (; k < o.walk_length; ++k) {
        const uint64_t rb = t.row_begin[v], re = t.row_begin[v + 1];
        if (rb == re) break;  // dead end
        const uint64_t cell = Pick(t.row_cumulative, rb, re, rng.Uniform() * t.row_cumulative[re - 1]);
        const uint64_t c = t.row_cluster[cell];
        const size_t b = t.Bucket(c * C + h.partition()[v]);
        if (b == SIZE_MAX) {
          // Only kDirect gets here: nobody in c reports towards s(v).
          const auto members = h.members(static_cast<uint32_t>(c));
          v = members[rng.Below(static_cast<uint32_t>(members.size()))];
          ++fallback;
        } else {
          const uint64_t eb = t.bucket_begin[b], ee = t.bucket_begin[b + 1];
          v = t.entry_vertex[Pick(t.entry_cumulative, eb, ee, rng.Uniform() * t.entry_cumulative[ee - 1])];
        }
        out[k] = v;
      }
      lengths[i] = k;
      if (++pending == kWalksPerUpdate) {
        done.fetch_add(pending, std::memory_order_relaxed);
        pending = 0;
      }
    }
    done.fetch_add(pending, std::memory_order_relaxed);
    fallbacks.fetch_add(fallback, std::memory_order_relaxed);
  };
  RunWorkersWithProgress(threads, work, done, walks, progress);

  std::vector<uint64_t> offsets(walks + 1, 0);
  for (uint64_t i = 0; i < walks; ++i) offsets[i + 1] = offsets[i] + lengths[i];
  std::vector<uint32_t> tokens(offsets.back());
  for (uint64_t i = 0; i < walks; ++i) {
    std::copy_n(slots.begin() + static_cast<std::ptrdiff_t>(i * o.walk_length), lengths[i],
                tokens.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
    if (lengths[i] < o.walk_length) ++local.dead_ends;
  }
  slots = {};
  local.walks = walks;
  local.tokens = tokens.size();
  local.fallback_steps = fallbacks.load();
  if (stats != nullptr) *stats = local;
  return WalkCorpus::FromCsr(h.vertex_count(), std::move(tokens), std::move(offsets), error);
}

}  // namespace nodefl::server::fedwalk
