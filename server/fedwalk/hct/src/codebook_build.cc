// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Codebook::Build: checks the inputs, lays out every row's slot in one
// array, and fills the rows on worker threads. Rows are independent and
// each writes only its own slot, so the threads share nothing mutable but
// the next-row counter.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <thread>

#include "codebook_row.h"
#include "nodefl/server/fedwalk/hct/codebook.h"

namespace nodefl::server::fedwalk {
namespace {

bool OptionsValid(const CodebookOptions& o) {
  return std::isfinite(o.epsilon) && o.epsilon > 0 && std::isfinite(o.score_scale) && o.score_scale > 0 &&
         std::isfinite(o.epsilon * o.score_scale) && std::isfinite(o.score_clip) && o.score_clip >= 0 &&
         o.k >= 1 && o.k <= nodefl::fedwalk::kMaxCodebookK &&
         o.min_probability >= 0 && o.min_probability < 1;
}

bool FiniteNonNegative(const CondensedMatrix& d) {
  return std::all_of(d.values().begin(), d.values().end(), [](float v) { return std::isfinite(v) && v >= 0; });
}

}  // namespace

std::optional<Codebook> Codebook::Build(const CondensedMatrix& dissim, const HctTree& tree, uint32_t vertex_count,
                                        const CodebookOptions& options) {
  if (!OptionsValid(options) || vertex_count >= nodefl::fedwalk::kAbsentVertex) return std::nullopt;
  const uint32_t m = tree.leaf_count();
  if (dissim.n() != m || !FiniteNonNegative(dissim)) return std::nullopt;
  for (uint32_t v : tree.leaf_vertices()) {
    if (v >= vertex_count) return std::nullopt;
  }

  Codebook cb;
  cb.vertex_count_ = vertex_count;
  cb.k_ = options.k;
  cb.score_clip_ = options.score_clip;
  const uint32_t row_size = std::min(options.k, m);
  std::vector<uint8_t> present(vertex_count, 0);
  for (uint32_t v : tree.leaf_vertices()) present[v] = 1;
  cb.row_begin_.resize(size_t{vertex_count} + 1);
  size_t offset = 0;
  for (uint32_t v = 0; v < vertex_count; ++v) {
    cb.row_begin_[v] = offset;
    offset += present[v] ? row_size : 0;
  }
  cb.row_begin_[vertex_count] = offset;
  cb.entries_.resize(offset);
  cb.truncated_mass_.assign(vertex_count, 0.0f);
  std::vector<uint32_t> used_entries(vertex_count, 0);

  const double exponent_scale = options.epsilon * options.score_scale;
  // Rows cost the same, so a shared counter handing out small batches
  // balances the threads without a scheduler.
  constexpr uint32_t kBatch = 16;
  const float kBelowOne = std::nextafter(1.0f, 0.0f);
  std::atomic<uint32_t> next_leaf{0};
  std::mutex max_mutex;
  double max_abs_score = 0;
  auto work = [&] {
    CodebookRowBuilder builder(dissim, tree, exponent_scale, options.score_clip);
    struct Publish {  // fold this thread's maximum in when it finishes
      CodebookRowBuilder& b;
      std::mutex& m;
      double& max;
      ~Publish() {
        std::lock_guard<std::mutex> lock(m);
        max = std::max(max, b.max_abs_score());
      }
    } publish{builder, max_mutex, max_abs_score};
    for (;;) {
      const uint32_t first = next_leaf.fetch_add(kBatch, std::memory_order_relaxed);
      if (first >= m) return;
      const uint32_t last = std::min(m, first + kBatch);
      for (uint32_t leaf = first; leaf < last; ++leaf) {
        const uint32_t v = tree.leaf_vertex(leaf);
        const std::span<Entry> slot(cb.entries_.data() + cb.row_begin_[v], row_size);
        // Below 1 in double (the top entry weighs 1), but float rounding
        // could reach 1 for millions of leaves; Parse would refuse that.
        size_t used = 0;
        cb.truncated_mass_[v] =
            std::min(static_cast<float>(builder.Build(leaf, slot, options.min_probability, &used)), kBelowOne);
        used_entries[v] = static_cast<uint32_t>(used);
      }
    }
  };
  const unsigned threads = std::clamp<unsigned>(options.threads, 1, std::max<uint32_t>(1, m / kBatch));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work);
    work();
  }  // jthreads join here
  cb.max_abs_score_ = max_abs_score;
  // Close the gaps left by rows shorter than min(K, m).
  size_t write = 0;
  for (uint32_t v = 0; v < vertex_count; ++v) {
    const size_t begin = cb.row_begin_[v];
    cb.row_begin_[v] = write;
    for (uint32_t j = 0; j < used_entries[v]; ++j) cb.entries_[write++] = cb.entries_[begin + j];
  }
  cb.row_begin_[vertex_count] = write;
  cb.entries_.resize(write);
  cb.entries_.shrink_to_fit();
  return cb;
}

std::span<const Codebook::Entry> Codebook::row(uint32_t vertex) const {
  if (vertex >= vertex_count_) return {};
  return std::span<const Entry>(entries_.data() + row_begin_[vertex], row_begin_[vertex + 1] - row_begin_[vertex]);
}

double Codebook::truncated_mass(uint32_t vertex) const {
  return vertex < vertex_count_ ? double{truncated_mass_[vertex]} : 0.0;
}

double Codebook::max_truncated_mass() const {
  float max = 0;
  for (float t : truncated_mass_) max = std::max(max, t);
  return max;
}

bool Codebook::operator==(const Codebook& other) const {
  const auto same_entry = [](const Entry& a, const Entry& b) {
    return a.vertex == b.vertex && a.accept_q31 == b.accept_q31 && a.alias == b.alias;
  };
  return vertex_count_ == other.vertex_count_ && k_ == other.k_ && row_begin_ == other.row_begin_ &&
         truncated_mass_ == other.truncated_mass_ &&
         std::equal(entries_.begin(), entries_.end(), other.entries_.begin(), other.entries_.end(), same_entry);
}

}  // namespace nodefl::server::fedwalk
