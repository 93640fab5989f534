// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The streaming artefact parsers of the HCT job, fed in pieces of every
// size from 1 byte up, so records and rows straddle piece boundaries at
// every possible position.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "fedwalk_test_artefacts.h"
#include "heap_counter.h"
#include "nodefl/fedwalk/codebook_stream.h"
#include "nodefl/fedwalk/degree_features.h"
#include "nodefl/fedwalk/neighbour_filters.h"
#include "nodefl/fedwalk/record_assembler.h"
#include "nodefl/fedwalk/tree_stream.h"

namespace nodefl::fedwalk {
namespace {

using namespace fedwalk::testing;  // NOLINT: artefact builders

// Feeds `bytes` to `feed(offset, piece)` in pieces of `piece` bytes.
template <typename Feed>
void FeedInPieces(const std::vector<uint8_t>& bytes, size_t piece, Feed feed) {
  for (size_t at = 0; at < bytes.size(); at += piece) {
    const size_t n = bytes.size() - at < piece ? bytes.size() - at : piece;
    feed(at, ConstByteSpan(bytes).subspan(at, n));
  }
}

const size_t kPieces[] = {1, 2, 3, 5, 7, 11, 12, 13, 64, 4096};

std::vector<HctNeighbour> Neighbours(const std::vector<uint32_t>& ids) {
  std::vector<HctNeighbour> n(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) n[i].id = ids[i];
  return n;
}

// ---- RecordAssembler --------------------------------------------------------------------

TEST(RecordAssemblerTest, ReassemblesRecordsAcrossAnyCut) {
  std::vector<uint8_t> stream(12 * 9);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t piece : kPieces) {
    RecordAssembler assembler;
    std::vector<uint8_t> out;
    FeedInPieces(stream, piece, [&](size_t, ConstByteSpan data) {
      while (!data.empty()) {
        const uint8_t* record = nullptr;
        data = data.subspan(assembler.Take(data, 12, &record));
        if (record != nullptr) out.insert(out.end(), record, record + 12);
      }
    });
    EXPECT_EQ(out, stream) << "piece " << piece;
    EXPECT_EQ(assembler.held(), 0u);
  }
}

// ---- BinPlanFilter ------------------------------------------------------------------------

TEST(BinPlanFilterTest, PicksNeighbourBinsAndKeepsThePlan) {
  const uint32_t n = 50, bins = 3;
  std::vector<uint8_t> plan(n);
  for (uint32_t v = 0; v < n; ++v) plan[v] = static_cast<uint8_t>(v % 4 == 3 ? kAbsentBin : v % bins);
  for (size_t piece : kPieces) {
    auto neighbours = Neighbours({0, 3, 17, 48, 49, 60});  // 3: absent in plan, 60: beyond it
    std::vector<uint8_t> keep(n, 0xAA);
    BinPlanFilter f;
    f.Begin(neighbours, bins, n, keep);
    FeedInPieces(plan, piece, [&](size_t at, ConstByteSpan d) { f.Feed(at, d); });
    ASSERT_TRUE(f.Finish().ok());
    EXPECT_EQ(neighbours[0].bin, 0);
    EXPECT_EQ(neighbours[1].bin, kAbsentBin);
    EXPECT_EQ(neighbours[2].bin, 17 % 3);
    EXPECT_EQ(neighbours[3].bin, 48 % 3);
    EXPECT_EQ(neighbours[4].bin, 49 % 3);
    EXPECT_EQ(neighbours[5].bin, kAbsentBin);
    EXPECT_EQ(f.neighbours_binned(), 4u);
    EXPECT_TRUE(f.kept());
    EXPECT_EQ(keep, plan);
  }
}

TEST(BinPlanFilterTest, SmallKeepBufferIsUntouchedAndBadBinsFailThePlan) {
  std::vector<uint8_t> plan = {0, 1, 0, 1};
  auto neighbours = Neighbours({1, 2});
  std::vector<uint8_t> keep(3, 0xAA);
  BinPlanFilter f;
  f.Begin(neighbours, 2, 4, keep);
  f.Feed(0, plan);
  EXPECT_TRUE(f.Finish().ok());
  EXPECT_FALSE(f.kept());
  EXPECT_EQ(keep, std::vector<uint8_t>(3, 0xAA));

  plan[3] = 2;  // bins = 2: 2 is neither a bin nor kAbsentBin
  f.Begin(neighbours, 2, 4, {});
  f.Feed(0, plan);
  EXPECT_EQ(f.Finish(), Status::DataLoss());

  f.Begin(neighbours, 2, 4, {});
  f.Feed(0, ConstByteSpan(plan).first(3));  // short
  EXPECT_EQ(f.Finish(), Status::DataLoss());
}

// Found by tests/fuzz/fuzz_fedwalk_artefacts: a piece crossing the plan's
// end marked it invalid without moving past it, so the next in-order piece
// failed the filter's own offset check and aborted the process.
TEST(BinPlanFilterTest, APlanLongerThanTheGraphIsRefusedWhateverThePieces) {
  const std::vector<uint8_t> plan = {0, 1, 0, 1};
  auto neighbours = Neighbours({0});
  BinPlanFilter f;
  f.Begin(neighbours, 2, 1, {});
  f.Feed(0, ConstByteSpan(plan).first(2));
  f.Feed(2, ConstByteSpan(plan).subspan(2));
  EXPECT_EQ(f.Finish(), Status::DataLoss());
}

// ---- DictionaryFilter -----------------------------------------------------------------------

TEST(DictionaryFilterTest, KeepsNeighbourRowsAcrossAnyCut) {
  const uint32_t n = 30, bins = 3;
  std::vector<std::vector<float>> rows(n);
  for (uint32_t v = 0; v < n; ++v) {
    rows[v] = {static_cast<float>(v) * 0.5f, 1.25f, -static_cast<float>(v % 4)};
  }
  rows[9] = NanRow(bins);
  rows[21][1] = std::numeric_limits<float>::infinity();
  const auto dict = EncodeDictionary(rows);
  for (size_t piece : kPieces) {
    auto neighbours = Neighbours({0, 4, 5, 9, 21, 29, 31});
    DictionaryFilter f;
    f.Begin(neighbours, bins, n);
    FeedInPieces(dict, piece, [&](size_t at, ConstByteSpan d) { f.Feed(at, d); });
    EXPECT_EQ(f.Finish(), 4u) << "piece " << piece;
    for (const HctNeighbour& nb : neighbours) {
      const bool present = nb.id < n && nb.id != 9 && nb.id != 21;
      EXPECT_EQ(nb.in_dictionary, present) << nb.id;
      if (!present) continue;
      EXPECT_EQ(std::memcmp(nb.row_bytes, dict.data() + nb.id * bins * 4, bins * 4), 0) << nb.id;
      EXPECT_DOUBLE_EQ(nb.estimated_degree, static_cast<double>(rows[nb.id][0]) + 1.25 +
                                                static_cast<double>(rows[nb.id][2]));
    }
  }
}

TEST(DictionaryFilterTest, AShortDictionaryLeavesEveryoneAbsent) {
  const auto dict = EncodeDictionary({{1, 2}, {3, 4}, {5, 6}});
  auto neighbours = Neighbours({0, 2});
  DictionaryFilter f;
  f.Begin(neighbours, 2, 3);
  f.Feed(0, ConstByteSpan(dict).first(dict.size() - 1));
  EXPECT_EQ(f.Finish(), 0u);
  EXPECT_FALSE(neighbours[0].in_dictionary);
}

// ---- TreeStream -----------------------------------------------------------------------------

TEST(TreeStreamTest, VerifiesAndKeepsAValidTree) {
  const std::vector<uint32_t> leaves = {4, 0, 9, 2, 7, 1};
  const auto tree = CaterpillarTree(leaves);
  ASSERT_EQ(tree.size(), TreeArtefactBytes(leaves.size()));
  for (size_t piece : kPieces) {
    std::vector<uint8_t> keep(tree.size() + 3, 0);
    TreeStream t;
    t.Begin(tree.size(), 10, keep);
    FeedInPieces(tree, piece, [&](size_t at, ConstByteSpan d) { t.Feed(at, d); });
    ASSERT_TRUE(t.Finish().ok()) << "piece " << piece;
    EXPECT_TRUE(t.kept());
    EXPECT_EQ(t.leaves(), 6u);
    EXPECT_EQ(std::vector<uint8_t>(keep.begin(), keep.begin() + tree.size()), tree);
  }
  // Too small a buffer: verified, not kept.
  std::vector<uint8_t> small(8);
  TreeStream t;
  t.Begin(tree.size(), 10, small);
  t.Feed(0, tree);
  EXPECT_TRUE(t.Finish().ok());
  EXPECT_FALSE(t.kept());
}

TEST(TreeStreamTest, RejectsMalformedTrees) {
  auto check = [](const std::vector<uint8_t>& tree, uint32_t n, uint64_t announced) {
    TreeStream t;
    t.Begin(announced, n, {});
    FeedInPieces(tree, 5, [&](size_t at, ConstByteSpan d) { t.Feed(at, d); });
    return t.Finish();
  };
  const auto good = CaterpillarTree({0, 1, 2});
  EXPECT_TRUE(check(good, 3, good.size()).ok());
  const auto leaf_out_of_range = CaterpillarTree({0, 1, 3});
  EXPECT_EQ(check(leaf_out_of_range, 3, leaf_out_of_range.size()), Status::DataLoss());
  // Merge 0 may only join leaves 0..2; node 3 does not exist yet.
  const auto future = EncodeTree({0, 1, 2}, {{0, 3, 1.0f}, {3, 2, 2.0f}});
  EXPECT_EQ(check(future, 3, future.size()), Status::DataLoss());
  const auto self_merge = EncodeTree({0, 1, 2}, {{1, 1, 1.0f}, {3, 2, 2.0f}});
  EXPECT_EQ(check(self_merge, 3, self_merge.size()), Status::DataLoss());
  const auto falling = EncodeTree({0, 1, 2}, {{0, 1, 2.0f}, {3, 2, 1.0f}});
  EXPECT_EQ(check(falling, 3, falling.size()), Status::DataLoss());
  const auto nan_height =
      EncodeTree({0, 1, 2}, {{0, 1, 1.0f}, {3, 2, std::numeric_limits<float>::quiet_NaN()}});
  EXPECT_EQ(check(nan_height, 3, nan_height.size()), Status::DataLoss());
  // The announced size disagrees with the leaf count.
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(check(longer, 3, longer.size()), Status::DataLoss());
  EXPECT_EQ(check(std::vector<uint8_t>(good.begin(), good.end() - 1), 3, good.size()), Status::DataLoss());
}

// ---- CodebookStream ------------------------------------------------------------------------

struct CodebookCase {
  uint32_t n = 40;
  uint16_t k = 5;
  std::vector<bool> absent;
  std::vector<TestCodebookRow> rows;
  std::vector<uint8_t> bytes;
  CodebookCase() {
    absent.assign(n, false);
    absent[13] = absent[20] = true;
    rows = MakeCodebookRows(n, k, absent);
    bytes = EncodeCodebook(n, k, rows);
  }
};

TEST(CodebookStreamTest, KeepsOnlyNeighbourRowsAcrossAnyCut) {
  CodebookCase c;
  const std::vector<uint32_t> ids = {0, 6, 13, 19, 20, 39, 44};  // 13, 20 absent; 44 beyond n
  for (size_t piece : kPieces) {
    auto neighbours = Neighbours(ids);
    std::vector<CodebookEntry> pool(ids.size() * c.k);
    CodebookStream s;
    s.Begin(neighbours, pool, c.n);
    FeedInPieces(c.bytes, piece, [&](size_t at, ConstByteSpan d) { s.Feed(at, d); });
    ASSERT_TRUE(s.Finish().ok()) << "piece " << piece;
    EXPECT_EQ(s.k(), c.k);
    size_t used = 0;
    uint32_t kept = 0;
    for (const HctNeighbour& nb : neighbours) {
      const bool has = nb.id < c.n && !c.absent[nb.id];
      ASSERT_EQ(nb.has_codebook_row, has) << nb.id;
      if (!has) continue;
      ++kept;
      const auto& want = c.rows[nb.id];
      ASSERT_EQ(nb.codebook_count, want.entries.size());
      EXPECT_EQ(nb.truncated_mass, want.truncated_mass);
      for (size_t j = 0; j < want.entries.size(); ++j) {
        const CodebookEntry& got = pool[nb.codebook_offset + j];
        EXPECT_EQ(got.vertex, want.entries[j].vertex);
        EXPECT_EQ(got.accept_q31, want.entries[j].accept_q31);
        EXPECT_EQ(got.alias, want.entries[j].alias);
      }
      used += want.entries.size();
    }
    // The pool holds the neighbours' rows and nothing else.
    EXPECT_EQ(s.pool_used(), used);
    EXPECT_EQ(s.rows_kept(), kept);
  }
}

Status ParseCodebook(const std::vector<uint8_t>& bytes, uint32_t n, std::vector<HctNeighbour>& neighbours,
                     std::vector<CodebookEntry>& pool, CodebookStream& s) {
  s.Begin(neighbours, pool, n);
  FeedInPieces(bytes, 7, [&](size_t at, ConstByteSpan d) { s.Feed(at, d); });
  return s.Finish();
}

TEST(CodebookStreamTest, AnyInvalidEntryDropsEverything) {
  CodebookCase c;
  struct Corruption {
    const char* what;
    void (*apply)(CodebookCase&);
  };
  const Corruption corruptions[] = {
      {"alias out of range", [](CodebookCase& k) { k.rows[6].entries[0].alias = 99; }},
      {"accept above 2^31", [](CodebookCase& k) { k.rows[30].entries[0].accept_q31 = kQ31One + 1; }},
      {"vertex out of range", [](CodebookCase& k) { k.rows[2].entries[0].vertex = k.n; }},
      {"count above K", [](CodebookCase& k) {
         k.rows[1].entries.resize(k.k + 1);
         for (auto& e : k.rows[1].entries) e = CodebookEntry{1, 0, 0};
       }},
      {"NaN truncated mass", [](CodebookCase& k) { k.rows[5].truncated_mass = std::numeric_limits<float>::quiet_NaN(); }},
  };
  for (const Corruption& corruption : corruptions) {
    CodebookCase bad;
    corruption.apply(bad);
    bad.bytes = EncodeCodebook(bad.n, bad.k, bad.rows);
    auto neighbours = Neighbours({0, 6, 19, 39});
    std::vector<CodebookEntry> pool(100);
    CodebookStream s;
    EXPECT_EQ(ParseCodebook(bad.bytes, bad.n, neighbours, pool, s), Status::DataLoss()) << corruption.what;
    EXPECT_EQ(s.pool_used(), 0u);
    EXPECT_EQ(s.rows_kept(), 0u);
    for (const HctNeighbour& nb : neighbours) EXPECT_FALSE(nb.has_codebook_row) << corruption.what;
  }
}

TEST(CodebookStreamTest, RejectsBadFraming) {
  CodebookCase c;
  auto neighbours = Neighbours({0, 6});
  std::vector<CodebookEntry> pool(100);
  CodebookStream s;
  // Header names another vertex count.
  EXPECT_EQ(ParseCodebook(EncodeCodebook(c.n + 1, c.k, c.rows), c.n, neighbours, pool, s), Status::DataLoss());
  // K = 0 and K above the maximum.
  EXPECT_EQ(ParseCodebook(EncodeCodebook(c.n, 0, c.rows), c.n, neighbours, pool, s), Status::DataLoss());
  EXPECT_EQ(ParseCodebook(EncodeCodebook(c.n, kMaxCodebookK + 1, c.rows), c.n, neighbours, pool, s),
            Status::DataLoss());
  // Trailing and missing bytes.
  auto longer = c.bytes;
  longer.push_back(0);
  EXPECT_EQ(ParseCodebook(longer, c.n, neighbours, pool, s), Status::DataLoss());
  EXPECT_EQ(ParseCodebook(std::vector<uint8_t>(c.bytes.begin(), c.bytes.end() - 3), c.n, neighbours, pool, s),
            Status::DataLoss());
  // Non-zero reserved field in the header.
  auto reserved = c.bytes;
  reserved[6] = 1;
  EXPECT_EQ(ParseCodebook(reserved, c.n, neighbours, pool, s), Status::DataLoss());
  EXPECT_TRUE(ParseCodebook(c.bytes, c.n, neighbours, pool, s).ok());
}

TEST(CodebookStreamTest, PoolOverflowKeepsTheRowsThatFit) {
  CodebookCase c;
  auto neighbours = Neighbours({0, 6, 19, 39});
  // Row sizes: 1 + 7v mod 5 -> v=0: 1, v=6: 3, v=19: 4, v=39: 4.
  std::vector<CodebookEntry> pool(1 + 3 + 4);
  CodebookStream s;
  EXPECT_EQ(ParseCodebook(c.bytes, c.n, neighbours, pool, s), Status::ResourceExhausted());
  EXPECT_TRUE(neighbours[0].has_codebook_row);
  EXPECT_TRUE(neighbours[1].has_codebook_row);
  EXPECT_TRUE(neighbours[2].has_codebook_row);
  EXPECT_FALSE(neighbours[3].has_codebook_row);
  EXPECT_EQ(s.pool_used(), 8u);
  EXPECT_EQ(s.rows_kept(), 3u);
}

TEST(ArtefactStreamTest, NeverAllocates) {
  CodebookCase c;
  auto neighbours = Neighbours({0, 6, 19, 39});
  std::vector<CodebookEntry> pool(100);
  const auto tree = CaterpillarTree({0, 1, 2, 3});
  const auto dict = EncodeDictionary(std::vector<std::vector<float>>(40, {1.0f, 2.0f}));
  CodebookStream s;
  TreeStream t;
  DictionaryFilter d;
  NODEFL_EXPECT_NO_HEAP({
    s.Begin(neighbours, pool, c.n);
    for (size_t at = 0; at < c.bytes.size(); at += 5) {
      s.Feed(at, ConstByteSpan(c.bytes).subspan(at, c.bytes.size() - at < 5 ? c.bytes.size() - at : 5));
    }
    s.Finish().IgnoreError();
    t.Begin(tree.size(), 4, {});
    t.Feed(0, tree);
    d.Begin(neighbours, 2, 40);
    d.Feed(0, dict);
    (void)d.Finish();
  });
  EXPECT_EQ(s.rows_kept(), 4u);
  EXPECT_TRUE(t.Finish().ok());
}

}  // namespace
}  // namespace nodefl::fedwalk
