// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The device-side readers of the FedWalk HCT artefacts the server streams
// (protocol/fedwalk/hct_format.h): BinPlanFilter and DictionaryFilter
// (neighbour_filters.h), TreeStream and TreeIndex (tree_stream.h,
// tree_index.h, with NearestInBins / CountLeavesPerBin on an accepted tree),
// CodebookStream (codebook_stream.h), and the HctParameters codec. Each is
// fed the artefact in pieces whose sizes come from the input (records
// straddle pieces anywhere, as chunks cut them), with caller memory of
// exactly the size the role would give (heap-allocated, so ASan sees one
// byte too far), and compared with a reference reading of the same bytes
// written here in one pass from the documented layout: accepted exactly
// when the layout is valid (invalid input is refused with an error status,
// never accepted), and what is kept (bins, rows, tree bytes, parent links,
// codebook rows and pool offsets) is exactly what the bytes say. There is
// no artefact encoder in the SDK (the server writes them), so the
// reference reader is the round trip; HctParameters has one, and decoded
// parameters must encode back to the same values and bytes.
//
// Input: byte 0 picks the reader, byte 1 the vertex count (1 .. 48),
// byte 2 the bins (1 .. 16; for the codebook the K the pool is sized
// for), byte 3 the own id and neighbour ids, byte 4 seeds the piece sizes,
// byte 5 how the caller's memory is sized; the rest is the artefact.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nodefl/fedwalk/codebook_stream.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/neighbour_filters.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/fedwalk/tree_stream.h"
#include "nodefl/protocol/fedwalk/hct_format.h"

namespace {

using nodefl::ByteSpan;
using nodefl::ConstByteSpan;
using nodefl::Span;
using nodefl::StatusCode;
namespace fw = nodefl::fedwalk;

void Check(bool ok) {
  if (!ok) std::abort();
}

// The reference reads bytes itself rather than through core/little_endian.h,
// so a wrong loader in the SDK would not hide behind the same one here.
uint32_t U16(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8; }
uint32_t U32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
float F32(const uint8_t* p) {
  const uint32_t bits = U32(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

uint64_t Mix(uint64_t x) {  // splitmix64: spreads one input byte over many decisions
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Setup {
  uint32_t n = 1;      // vertex_count
  uint32_t bins = 1;   // 1 .. kMaxBins
  uint32_t own = fw::kAbsentVertex;
  uint32_t memory = 0;  // 0 exact, 1 one short, 2 none, 3 generous
  uint32_t pieces = 1;  // LCG state
  std::vector<fw::HctNeighbour> neighbours;
};

// Neighbour ids as the role's contract has them: ascending, distinct, not
// the own id; some lie beyond the vertex count (not in the artefacts).
void PickNeighbours(Setup& s, uint8_t seed) {
  const uint64_t mask = Mix(seed) & Mix(seed + 0x100u);  // about a quarter of the ids
  const uint32_t own_pick = static_cast<uint32_t>(Mix(seed + 0x200u) % (s.n + 1));
  s.own = own_pick == s.n ? fw::kAbsentVertex : own_pick;
  for (uint32_t id = 0; id < s.n + 4 && s.neighbours.size() < 16; ++id) {
    if (id == s.own || ((mask >> (id % 64)) & 1) == 0) continue;
    fw::HctNeighbour nb;
    nb.id = id;
    s.neighbours.push_back(nb);
  }
}

// Next piece: mostly short (records of 4, 8 and 12 bytes straddle them at
// every position), now and then long; never empty (ChunkReceiver refuses
// empty chunks).
size_t NextPiece(Setup& s, size_t left) {
  s.pieces = s.pieces * 1103515245u + 12345u;
  const uint32_t r = s.pieces >> 8;
  const size_t piece = (r & 15) == 0 ? 1 + (r >> 4) % 700 : 1 + (r >> 4) % 29;
  return piece < left ? piece : left;
}

template <typename Feed>
void FeedAll(Setup& s, ConstByteSpan art, Feed feed) {
  size_t at = 0;
  while (at < art.size()) {
    const size_t piece = NextPiece(s, art.size() - at);
    feed(at, art.subspan(at, piece));
    at += piece;
  }
}

void CheckIdsKept(const Setup& s, const std::vector<uint32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) Check(s.neighbours[i].id == ids[i]);
}

std::vector<uint32_t> Ids(const Setup& s) {
  std::vector<uint32_t> ids;
  for (const fw::HctNeighbour& nb : s.neighbours) ids.push_back(nb.id);
  return ids;
}

// ---- kBinPlan ------------------------------------------------------------

void BinPlan(Setup& s, ConstByteSpan art) {
  bool valid = art.size() == s.n;
  for (uint8_t b : art) valid = valid && (b < s.bins || b == fw::kAbsentBin);
  const size_t keep_size = s.memory == 0 ? s.n : s.memory == 1 ? s.n - 1 : s.memory == 2 ? 0 : s.n + 7;
  std::vector<uint8_t> keep(keep_size, 0xA5);
  const std::vector<uint32_t> ids = Ids(s);
  fw::BinPlanFilter f;
  f.Begin(s.neighbours, s.bins, s.n, keep);
  FeedAll(s, art, [&](size_t at, ConstByteSpan piece) { f.Feed(at, piece); });
  Check(f.Finish().ok() == valid);
  CheckIdsKept(s, ids);
  uint32_t binned = 0;
  for (const fw::HctNeighbour& nb : s.neighbours) {
    // Whatever the plan held, a neighbour never gets a bin out of range.
    Check(nb.bin < s.bins || nb.bin == fw::kAbsentBin);
    if (!valid) continue;
    const uint8_t want = nb.id < s.n && art[nb.id] < s.bins ? art[nb.id] : fw::kAbsentBin;
    Check(nb.bin == want);
    if (want != fw::kAbsentBin) ++binned;
  }
  if (!valid) return;
  Check(f.neighbours_binned() == binned);
  Check(f.kept() == (keep_size >= s.n));
  if (f.kept()) Check(std::memcmp(keep.data(), art.data(), s.n) == 0);
}

// ---- kDictionary ---------------------------------------------------------

void Dictionary(Setup& s, ConstByteSpan art) {
  const size_t row = 4 * size_t{s.bins};
  const bool whole = art.size() == size_t{s.n} * row;
  const std::vector<uint32_t> ids = Ids(s);
  fw::DictionaryFilter f;
  f.Begin(s.neighbours, s.bins, s.n);
  FeedAll(s, art, [&](size_t at, ConstByteSpan piece) { f.Feed(at, piece); });
  const uint32_t present = f.Finish();
  CheckIdsKept(s, ids);
  uint32_t want_present = 0;
  for (const fw::HctNeighbour& nb : s.neighbours) {
    bool finite = false;
    double sum = 0.0;
    if (whole && nb.id < s.n) {
      const uint8_t* r = art.data() + size_t{nb.id} * row;
      finite = true;
      for (uint32_t i = 0; i < s.bins; ++i) {
        finite = finite && std::isfinite(F32(r + 4 * i));
        sum += static_cast<double>(F32(r + 4 * i));
      }
      Check(std::memcmp(nb.row_bytes, r, row) == 0);
    }
    // Only a whole dictionary makes a neighbour present.
    Check(nb.in_dictionary == finite);
    if (finite) {
      ++want_present;
      Check(std::memcmp(&nb.estimated_degree, &sum, sizeof sum) == 0);
    } else {
      Check(nb.estimated_degree == 0.0);
    }
    for (size_t i = row; i < sizeof nb.row_bytes; ++i) Check(nb.row_bytes[i] == 0);
  }
  Check(present == want_present);
}

// ---- kTree -----------------------------------------------------------------

uint64_t TreeBytes(uint64_t m) { return m == 0 ? 4 : 4 + 4 * m + 12 * (m - 1); }

void CheckNearest(const Setup& s, const fw::TreeIndex& index, ConstByteSpan art, uint8_t seed);

void Tree(Setup& s, ConstByteSpan art, uint8_t seed) {
  const size_t size = art.size();
  const uint64_t m = size >= 4 ? U32(art.data()) : 0;
  const bool shaped = size >= 4 && m <= s.n && size == TreeBytes(m);
  // TreeStream's checks (no "merged once" check) and TreeIndex's (no
  // height check, but distinct leaves and children without a parent yet).
  bool stream_ok = shaped, index_ok = shaped;
  if (shaped) {
    const uint8_t* leaves = art.data() + 4;
    std::vector<bool> leaf_seen(s.n, false);
    for (uint64_t i = 0; i < m; ++i) {
      const uint32_t v = U32(leaves + 4 * i);
      if (v >= s.n) {
        stream_ok = index_ok = false;
        break;
      }
      if (leaf_seen[v]) index_ok = false;
      leaf_seen[v] = true;
    }
    std::vector<bool> has_parent(m == 0 ? 0 : 2 * m - 1, false);
    float last = 0.0f;
    for (uint64_t j = 0; j + 1 < m; ++j) {
      const uint8_t* merge = leaves + 4 * m + 12 * j;
      const uint64_t a = U32(merge), b = U32(merge + 4), node = m + j;
      const float h = F32(merge + 8);
      if (a >= node || b >= node || a == b) {
        stream_ok = index_ok = false;
        break;
      }
      if (!std::isfinite(h) || (j > 0 && h < last)) stream_ok = false;
      last = h;
      if (has_parent[a] || has_parent[b]) index_ok = false;
      has_parent[a] = has_parent[b] = true;
    }
  }

  // The stream, with the tree buffer sized as HctStorage::tree may be.
  const size_t keep_size = s.memory == 0 ? size : s.memory == 1 ? (size == 0 ? 0 : size - 1)
                         : s.memory == 2 ? 0 : size + 13;
  std::vector<uint8_t> keep(keep_size, 0x5A);
  fw::TreeStream stream;
  stream.Begin(size, s.n, keep);
  FeedAll(s, art, [&](size_t at, ConstByteSpan piece) { stream.Feed(at, piece); });
  const nodefl::Status finished = stream.Finish();
  Check(finished.ok() == stream_ok);
  if (!finished.ok()) Check(finished.code() == StatusCode::kDataLoss);
  Check(stream.kept() == (stream_ok && keep_size >= size));
  if (stream.kept()) Check(std::memcmp(keep.data(), art.data(), size) == 0);
  if (stream_ok) Check(stream.leaves() == m);

  // The index, on any bytes (the walk role builds it from what it kept).
  // Memory one entry short of NodeCount(m) when byte 5 says so.
  const bool short_parent = s.memory == 1 && shaped && m > 0;
  const size_t parent_size = shaped ? fw::TreeIndex::NodeCount(static_cast<uint32_t>(m)) - (short_parent ? 1 : 0) : 0;
  std::vector<uint32_t> parent(parent_size, 0xDEADBEEFu), leaf_of(s.n, 0xDEADBEEFu);
  fw::TreeIndex index;
  const nodefl::Status built = index.Build(art, s.n, parent, leaf_of);
  if (size < 4) {
    Check(built.code() == StatusCode::kInvalidArgument);
  } else if (!shaped) {
    Check(built.code() == StatusCode::kDataLoss);
  } else if (short_parent) {
    Check(built.code() == StatusCode::kResourceExhausted);
  } else {
    Check(built.ok() == index_ok);
    if (!index_ok) Check(built.code() == StatusCode::kDataLoss);
  }
  if (!built.ok()) {
    Check(index.empty() && index.leaves() == 0 && index.root() == fw::TreeIndex::kNone);
    Check(index.LeafOf(0) == fw::TreeIndex::kNone);
    return;
  }
  const uint32_t mm = static_cast<uint32_t>(m);
  Check(index.leaves() == mm);
  if (mm == 0) {
    Check(index.root() == fw::TreeIndex::kNone);
  } else {
    Check(index.root() == 2 * mm - 2 && index.Parent(index.root()) == fw::TreeIndex::kNone);
  }
  const uint8_t* leaves = art.data() + 4;
  std::vector<uint32_t> leaf_of_ref(s.n, fw::TreeIndex::kNone);
  for (uint32_t i = 0; i < mm; ++i) {
    Check(index.IsLeaf(i) && index.LeafVertex(i) == U32(leaves + 4 * i));
    leaf_of_ref[U32(leaves + 4 * i)] = i;
  }
  for (uint32_t v = 0; v < s.n; ++v) Check(index.LeafOf(v) == leaf_of_ref[v]);
  Check(index.LeafOf(s.n) == fw::TreeIndex::kNone);
  for (uint32_t j = 0; j + 1 < mm; ++j) {
    const uint8_t* merge = leaves + 4 * size_t{mm} + 12 * size_t{j};
    const uint32_t node = mm + j;
    Check(!index.IsLeaf(node));
    Check(index.FirstChild(node) == U32(merge) && index.SecondChild(node) == U32(merge + 4));
    Check(index.Parent(U32(merge)) == node && index.Parent(U32(merge + 4)) == node);
  }
  CheckNearest(s, index, art, seed);
}

// NearestInBins and CountLeavesPerBin on an accepted tree: the pool holds
// distinct tree vertices, never u or `exclude`, at most the quota per bin,
// and, with room for every quota, exactly min(quota, eligible leaves) per
// bin (the search walks up to the root, so it sees every other leaf).
void CheckNearest(const Setup& s, const fw::TreeIndex& index, ConstByteSpan art, uint8_t seed) {
  const uint32_t bins = s.bins;
  std::vector<uint8_t> plan(s.n);
  for (uint32_t v = 0; v < s.n; ++v) {
    const uint32_t b = static_cast<uint32_t>(Mix(uint64_t{seed} << 32 | v) % (bins + 1));
    plan[v] = b == bins ? fw::kAbsentBin : static_cast<uint8_t>(b);
  }
  std::vector<uint32_t> sizes(bins), want_sizes(bins, 0);
  fw::CountLeavesPerBin(index, plan, sizes);
  for (uint32_t i = 0; i < index.leaves(); ++i) {
    const uint32_t v = U32(art.data() + 4 + 4 * size_t{i});
    if (plan[v] < bins) ++want_sizes[plan[v]];
  }
  Check(sizes == want_sizes);
  if (index.empty()) return;
  const uint64_t r = Mix(seed + 0x300u);
  const uint32_t u = static_cast<uint32_t>(r % (s.n + 1));  // may be absent from the tree
  const uint32_t exclude = (r >> 20) % 3 == 0 ? fw::TreeIndex::kNone : static_cast<uint32_t>((r >> 24) % s.n);
  std::vector<uint32_t> quotas(bins);
  uint32_t wanted = 0;
  for (uint32_t b = 0; b < bins; ++b) {
    quotas[b] = static_cast<uint32_t>((r >> (32 + 2 * (b % 16))) & 3);
    wanted += quotas[b];
  }
  const bool roomy = s.memory != 1;
  std::vector<uint32_t> pool(roomy ? wanted : wanted / 2);
  const size_t got = fw::NearestInBins(index, plan, u, exclude, quotas, pool);
  Check(got <= pool.size());
  std::vector<uint32_t> per_bin(bins, 0);
  std::vector<bool> seen(s.n, false);
  for (size_t i = 0; i < got; ++i) {
    const uint32_t v = pool[i];
    Check(v < s.n && !seen[v] && v != u && v != exclude && index.LeafOf(v) != fw::TreeIndex::kNone);
    seen[v] = true;
    Check(plan[v] < bins);
    Check(++per_bin[plan[v]] <= quotas[plan[v]]);
  }
  if (index.LeafOf(u) == fw::TreeIndex::kNone) {
    Check(got == 0);
    return;
  }
  if (!roomy) return;
  std::vector<uint32_t> eligible(bins, 0);
  for (uint32_t i = 0; i < index.leaves(); ++i) {
    const uint32_t v = index.LeafVertex(i);
    if (v != u && v != exclude && plan[v] < bins) ++eligible[plan[v]];
  }
  for (uint32_t b = 0; b < bins; ++b) Check(per_bin[b] == (quotas[b] < eligible[b] ? quotas[b] : eligible[b]));
}

// ---- kCodebook -------------------------------------------------------------

struct KeptRow {
  bool kept = false;
  size_t offset = 0;
  uint32_t count = 0;
  float mass = 0.0f;
  const uint8_t* entries = nullptr;
};

void Codebook(Setup& s, ConstByteSpan art, uint32_t pool_k) {
  // The reference: one pass over the whole artefact.
  const uint8_t* p = art.data();
  const size_t size = art.size();
  bool valid = size >= 8 && U32(p) == s.n && U16(p + 4) >= 1 && U16(p + 4) <= fw::kMaxCodebookK &&
               U16(p + 6) == 0;
  const uint32_t k = valid ? U16(p + 4) : 0;
  const size_t deg = s.neighbours.size();
  const size_t full = (deg + 1) * pool_k;  // HctStorage: (deg + 1) x K always suffices
  const size_t pool_size = s.memory == 0 ? full : s.memory == 1 ? full / 2 : s.memory == 2 ? 0 : full + 5;
  std::vector<KeptRow> nb_rows(deg);
  KeptRow own_row;
  size_t used = 0;
  bool overflow = false;
  size_t at = 8;
  size_t cursor = 0;
  for (uint32_t v = 0; valid && v < s.n; ++v) {
    if (size - at < 8) {
      valid = false;
      break;
    }
    const uint32_t count = U16(p + at);
    const float mass = F32(p + at + 4);
    if (count > k || U16(p + at + 2) != 0 || !std::isfinite(mass) || (size - at - 8) / 12 < count) {
      valid = false;
      break;
    }
    const uint8_t* entries = p + at + 8;
    for (uint32_t e = 0; e < count; ++e) {
      const uint8_t* entry = entries + 12 * size_t{e};
      if (U32(entry) >= s.n || U32(entry + 4) > fw::kQ31One || U32(entry + 8) >= count) valid = false;
    }
    at += 8 + 12 * size_t{count};
    while (cursor < deg && s.neighbours[cursor].id < v) ++cursor;
    KeptRow* row = cursor < deg && s.neighbours[cursor].id == v ? &nb_rows[cursor] : v == s.own ? &own_row : nullptr;
    if (row != nullptr && count > 0) {
      if (pool_size - used >= count) {
        *row = KeptRow{true, used, count, mass, entries};
        used += count;
      } else {
        overflow = true;
      }
    }
  }
  valid = valid && at == size;  // nothing beyond the last row

  std::vector<fw::CodebookEntry> pool(pool_size);
  const std::vector<uint32_t> ids = Ids(s);
  fw::CodebookStream stream;
  stream.Begin(s.neighbours, pool, s.n, s.own);
  FeedAll(s, art, [&](size_t off, ConstByteSpan piece) { stream.Feed(off, piece); });
  const nodefl::Status finished = stream.Finish();
  CheckIdsKept(s, ids);
  if (!valid) {
    // Wrong anywhere: trusted nowhere.
    Check(finished.code() == StatusCode::kDataLoss);
    Check(stream.rows_kept() == 0 && stream.pool_used() == 0 && stream.own_row().empty());
    Check(stream.own_truncated_mass() == 0.0f);
    for (const fw::HctNeighbour& nb : s.neighbours) {
      Check(!nb.has_codebook_row && nb.codebook_count == 0 && nb.codebook_offset == 0 && nb.truncated_mass == 0.0f);
    }
    return;
  }
  Check(finished.code() == (overflow ? StatusCode::kResourceExhausted : StatusCode::kOk));
  Check(stream.k() == k && stream.pool_used() == used);
  auto same_entries = [&](size_t offset, const KeptRow& row) {
    for (uint32_t e = 0; e < row.count; ++e) {
      const fw::CodebookEntry& got = pool[offset + e];
      const uint8_t* entry = row.entries + 12 * size_t{e};
      Check(got.vertex == U32(entry) && got.accept_q31 == U32(entry + 4) && got.alias == U32(entry + 8));
    }
  };
  uint32_t kept = 0;
  for (size_t i = 0; i < deg; ++i) {
    const fw::HctNeighbour& nb = s.neighbours[i];
    const KeptRow& row = nb_rows[i];
    Check(nb.has_codebook_row == row.kept);
    if (!row.kept) {
      Check(nb.codebook_count == 0);
      continue;
    }
    ++kept;
    Check(nb.codebook_offset == row.offset && nb.codebook_count == row.count && SameBits(nb.truncated_mass, row.mass));
    same_entries(row.offset, row);
  }
  Check(stream.rows_kept() == kept);
  const Span<const fw::CodebookEntry> own = stream.own_row();
  if (own_row.kept) {
    Check(own.size() == own_row.count && own.data() == pool.data() + own_row.offset);
    Check(SameBits(stream.own_truncated_mass(), own_row.mass));
    same_entries(own_row.offset, own_row);
  } else {
    Check(own.empty() && stream.own_truncated_mass() == 0.0f);
  }
}

// ---- HctParameters (JobStart.parameters of round 1) ------------------------

void Parameters(ConstByteSpan bytes) {
  const nodefl::Result<fw::HctParameters> decoded = fw::DecodeHctParameters(bytes);
  if (!decoded.ok()) {
    Check(decoded.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  Check(fw::CheckHctParameters(*decoded).ok());
  uint8_t out[fw::kHctParametersBytes];
  Check(fw::EncodeHctParameters(*decoded, ByteSpan(out)).ok());
  // Bytes 34..35 are padding the encoder writes as zero and the decoder
  // does not read; everything else must come back byte for byte.
  Check(std::memcmp(out, bytes.data(), 34) == 0 && out[34] == 0 && out[35] == 0);
  const nodefl::Result<fw::HctParameters> again = fw::DecodeHctParameters(ConstByteSpan(out, sizeof out));
  Check(again.ok());
  const fw::HctParameters& a = *decoded;
  const fw::HctParameters& b = *again;
  Check(a.mode == b.mode && a.bins == b.bins && a.buckets == b.buckets && a.vertex_count == b.vertex_count &&
        a.epsilon_bins == b.epsilon_bins && a.epsilon_upload == b.epsilon_upload &&
        a.epsilon_walk == b.epsilon_walk && a.codebook_k == b.codebook_k);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  Setup s;
  s.n = 1 + data[1] % 48;
  s.bins = 1 + data[2] % fw::kMaxBins;
  s.memory = data[5] & 3;
  s.pieces = data[4] | 1u;
  PickNeighbours(s, data[3]);
  const ConstByteSpan art(data + 6, size - 6);
  switch (data[0] % 5) {
    case 0: BinPlan(s, art); break;
    case 1: Dictionary(s, art); break;
    case 2: Tree(s, art, data[3]); break;
    case 3: Codebook(s, art, 1 + data[2] % 8); break;
    case 4: Parameters(art); break;
  }
  return 0;
}
