// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "walk_devices.h"

#include <algorithm>
#include <optional>

#include "nodefl/fedwalk/codebook_stream.h"
#include "nodefl/fedwalk/neighbour_filters.h"
#include "nodefl/fedwalk/tree_stream.h"
#include "nodefl/server/fedwalk/hct/codebook.h"
#include "parallel_chunks.h"

namespace nodefl::server::fedwalk::walk_sim {

namespace fw = nodefl::fedwalk;

namespace {

// The pool a device would carve (HctSizing::codebook_entries()), cut down
// to what the rows it keeps need: CodebookStream keeps a row only when it
// fits whole, so a pool of min(capacity, need) keeps exactly the rows the
// full-size pool would, without n x 1024 spare entries in memory.
size_t PoolEntries(const Codebook& codebook, uint32_t v, const std::vector<uint32_t>& neighbours,
                   DevicePoolSizing sizing) {
  uint64_t need = codebook.row(v).size();
  for (uint32_t u : neighbours) need += codebook.row(u).size();
  if (sizing.entries_per_neighbour == 0) return static_cast<size_t>(need);
  const uint64_t capacity =
      uint64_t{sizing.entries_per_neighbour} * neighbours.size() + sizing.spare_entries;
  return static_cast<size_t>(std::min(need, capacity));
}

}  // namespace

std::string SimulatedDevices::BuildShared(const HctArtefacts& a) {
  // The tree: verified and kept by TreeStream, indexed as the walk role's
  // Init does. A tree that fails the index's checks leaves the predictor
  // off on a device; here it is an error, since the server made it.
  fw::TreeStream tree_stream;
  tree_.assign(a.tree.size(), 0);
  tree_stream.Begin(a.tree.size(), a.vertex_count, ByteSpan(tree_));
  tree_stream.Feed(0, ConstByteSpan(a.tree));
  if (!tree_stream.Finish().ok() || !tree_stream.kept()) return "the published tree is malformed";
  const Result<uint32_t> leaves = fw::TreeIndex::LeafCount(ConstByteSpan(tree_));
  if (!leaves.ok()) return "the published tree is malformed";
  tree_parent_.assign(fw::TreeIndex::NodeCount(*leaves), 0);
  leaf_of_vertex_.assign(a.vertex_count, 0);
  if (!tree_index_.Build(ConstByteSpan(tree_), a.vertex_count, Span<uint32_t>(tree_parent_),
                         Span<uint32_t>(leaf_of_vertex_))
           .ok()) {
    return "the published tree fails TreeIndex's checks";
  }
  // The whole bin plan, kept by a BinPlanFilter as the HCT role keeps it.
  fw::BinPlanFilter plan_filter;
  bin_plan_.assign(a.vertex_count, 0);
  plan_filter.Begin(Span<fw::HctNeighbour>(), a.bins, a.vertex_count, ByteSpan(bin_plan_));
  plan_filter.Feed(0, ConstByteSpan(a.bin_plan));
  if (!plan_filter.Finish().ok() || !plan_filter.kept()) return "the bin plan is malformed";
  bin_sizes_.assign(a.bins, 0);
  fw::CountLeavesPerBin(tree_index_, ConstByteSpan(bin_plan_), Span<uint32_t>(bin_sizes_));
  return {};
}

std::string SimulatedDevices::Build(const std::vector<std::vector<uint32_t>>& neighbours, const HctArtefacts& a,
                                    DevicePoolSizing sizing, double p, fw::JumpPredictor predictor,
                                    unsigned threads, std::atomic<uint64_t>* done) {
  const uint32_t n = a.vertex_count;
  if (neighbours.size() != n) return "the graph and the artefacts disagree on the vertex count";
  if (std::string error = BuildShared(a); !error.empty()) return error;
  // Row lengths, to size the pools (the server knows them; a device just
  // has room for "enough"). Parse also checks what CodebookStream will.
  const std::optional<Codebook> codebook = Codebook::Parse(a.codebook);
  if (!codebook || codebook->vertex_count() != n) return "the published codebook is malformed";

  std::vector<uint64_t> record_offsets(size_t{n} + 1, 0);
  std::vector<uint64_t> pool_offsets(size_t{n} + 1, 0);
  for (uint32_t v = 0; v < n; ++v) {
    record_offsets[v + 1] = record_offsets[v] + neighbours[v].size();
    pool_offsets[v + 1] = pool_offsets[v] + PoolEntries(*codebook, v, neighbours[v], sizing);
  }
  records_.assign(record_offsets[n], fw::HctNeighbour{});
  pools_.assign(pool_offsets[n], fw::CodebookEntry{});
  contexts_.assign(n, fw::WalkStepContext{});

  std::vector<std::string> errors(std::max(1u, threads));
  std::vector<uint64_t> not_kept(errors.size(), 0);
  ForChunks(n, 16, threads, [&](unsigned worker, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const auto v = static_cast<uint32_t>(i);
      const Span<fw::HctNeighbour> records(records_.data() + record_offsets[v], neighbours[v].size());
      for (size_t j = 0; j < records.size(); ++j) records[j].id = neighbours[v][j];
      // Round 1: the neighbours' bins (the whole plan is the shared copy).
      fw::BinPlanFilter plan;
      plan.Begin(records, a.bins, n, ByteSpan());
      plan.Feed(0, ConstByteSpan(a.bin_plan));
      // Round 2: the neighbours' dictionary rows.
      fw::DictionaryFilter dictionary;
      dictionary.Begin(records, a.bins, n);
      dictionary.Feed(0, ConstByteSpan(a.dictionary));
      dictionary.Finish();
      // Round 3: the neighbours' codebook rows and the device's own.
      const Span<fw::CodebookEntry> pool(pools_.data() + pool_offsets[v], pool_offsets[v + 1] - pool_offsets[v]);
      fw::CodebookStream rows;
      rows.Begin(records, pool, n, v);
      rows.Feed(0, ConstByteSpan(a.codebook));
      const Status kept = rows.Finish();
      if (!plan.Finish().ok() || (!kept.ok() && kept.code() != StatusCode::kResourceExhausted)) {
        if (errors[worker].empty()) errors[worker] = "device " + std::to_string(v) + " rejected an artefact";
        continue;
      }
      for (const fw::HctNeighbour& r : records) {
        if (!r.has_codebook_row && !codebook->row(r.id).empty()) ++not_kept[worker];
      }
      // The walk role's Init, field for field.
      fw::WalkStepContext& c = contexts_[v];
      c.own_id = v;
      c.neighbours = records;
      c.codebook_pool = pool;
      c.walk_neighbours = fw::CountWalkNeighbours(records);
      c.own_row = rows.own_row();
      if (!tree_index_.empty()) {
        c.tree = &tree_index_;
        c.bin_plan = ConstByteSpan(bin_plan_);
        c.bin_sizes = Span<const uint32_t>(bin_sizes_);
      }
      c.p = p;
      c.predictor = predictor;
    }
    if (done != nullptr) done->fetch_add(end - begin);
  });
  for (const std::string& e : errors) {
    if (!e.empty()) return e;
  }
  rows_not_kept_ = 0;
  for (uint64_t x : not_kept) rows_not_kept_ += x;
  devices_without_own_row_ = 0;
  devices_without_walk_neighbours_ = 0;
  for (const fw::WalkStepContext& c : contexts_) {
    devices_without_own_row_ += c.own_row.empty() ? 1 : 0;
    devices_without_walk_neighbours_ += c.walk_neighbours == 0 ? 1 : 0;
  }
  return {};
}

}  // namespace nodefl::server::fedwalk::walk_sim
