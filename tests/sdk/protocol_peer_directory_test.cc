// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The peer directory artefact: entries written by EncodePeerDirectoryEntry
// come back out of PeerDirectoryStream whatever the chunk boundaries, and
// malformed directories are refused.
#include "nodefl/protocol/peer_directory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "heap_counter.h"
#include "nodefl/core/little_endian.h"

namespace nodefl::protocol {
namespace {

struct Entry {
  uint32_t id;
  std::vector<uint8_t> cert, key;
};

std::vector<Entry> SomeEntries(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Entry> out;
  uint32_t id = 3;
  for (size_t i = 0; i < n; ++i) {
    Entry e;
    id += 1 + static_cast<uint32_t>(gen() % 9);
    e.id = id;
    e.cert.resize(1 + gen() % kMaxCertificateDerBytes);
    for (auto& b : e.cert) b = static_cast<uint8_t>(gen());
    e.key.resize(kJobKeyBytes);
    for (auto& b : e.key) b = static_cast<uint8_t>(gen());
    out.push_back(e);
  }
  return out;
}

std::vector<uint8_t> Directory(const std::vector<Entry>& entries) {
  std::vector<uint8_t> bytes(4);
  StoreU32Le(static_cast<uint32_t>(entries.size()), bytes.data());
  std::vector<uint8_t> buf(kMaxPeerDirectoryEntryBytes);
  for (const Entry& e : entries) {
    size_t n = 0;
    EXPECT_TRUE(EncodePeerDirectoryEntry(e.id, e.cert, e.key, buf, &n).ok());
    bytes.insert(bytes.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return bytes;
}

struct Seen {
  std::vector<Entry> entries;
  static void On(void* context, const nodefl_wire_PeerCertificate& c) {
    auto* self = static_cast<Seen*>(context);
    EXPECT_TRUE(c.found);
    self->entries.push_back({c.device_id, std::vector<uint8_t>(c.certificate_der.bytes, c.certificate_der.bytes + c.certificate_der.size),
                             std::vector<uint8_t>(c.job_key.bytes, c.job_key.bytes + c.job_key.size)});
  }
};

// Feeds `bytes` in pieces of random sizes; the first error or OK.
Status FeedInPieces(PeerDirectoryStream& stream, const std::vector<uint8_t>& bytes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min<size_t>(bytes.size() - at, 1 + gen() % 700);
    NODEFL_TRY(stream.Feed(at, ConstByteSpan(bytes.data() + at, n)));
    at += n;
  }
  return Status::Ok();
}

TEST(PeerDirectoryTest, EntriesComeBackWhateverThePieces) {
  const std::vector<Entry> entries = SomeEntries(40, 1);
  const std::vector<uint8_t> bytes = Directory(entries);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Seen seen;
    PeerDirectoryStream stream(&Seen::On, &seen);
    ASSERT_TRUE(FeedInPieces(stream, bytes, seed).ok());
    EXPECT_TRUE(stream.finished());
    ASSERT_EQ(seen.entries.size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ(seen.entries[i].id, entries[i].id);
      EXPECT_EQ(seen.entries[i].cert, entries[i].cert);
      EXPECT_EQ(seen.entries[i].key, entries[i].key);
    }
  }
  // Parsing touches no heap (the callback here does; a role's does not).
  PeerDirectoryStream quiet(nullptr, nullptr);
  Status s;
  NODEFL_EXPECT_NO_HEAP(s = quiet.Feed(0, bytes));
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(quiet.finished());
  EXPECT_EQ(quiet.entries(), 40u);
}

TEST(PeerDirectoryTest, MalformedDirectoriesAreDataLoss) {
  const std::vector<Entry> entries = SomeEntries(3, 2);
  auto refuse = [](std::vector<uint8_t> bytes) {
    PeerDirectoryStream stream(nullptr, nullptr);
    return stream.Feed(0, bytes);
  };
  // Ids not ascending.
  std::vector<Entry> swapped = entries;
  std::swap(swapped[0].id, swapped[1].id);
  EXPECT_EQ(refuse(Directory(swapped)), Status::DataLoss());
  // A job key of the wrong size, an empty certificate.
  std::vector<uint8_t> bad = Directory(entries);
  StoreU16Le(64, bad.data() + 4 + 6);
  EXPECT_EQ(refuse(bad), Status::DataLoss());
  bad = Directory(entries);
  StoreU16Le(0, bad.data() + 4 + 4);
  EXPECT_EQ(refuse(bad), Status::DataLoss());
  // Bytes after the last entry.
  bad = Directory(entries);
  bad.push_back(0);
  EXPECT_EQ(refuse(bad), Status::DataLoss());
  // A gap in the offsets.
  PeerDirectoryStream stream(nullptr, nullptr);
  const std::vector<uint8_t> good = Directory(entries);
  ASSERT_TRUE(stream.Feed(0, ConstByteSpan(good).first(10)).ok());
  EXPECT_EQ(stream.Feed(11, ConstByteSpan(good).subspan(11)), Status::DataLoss());
  // Fewer entries than announced: never finished.
  PeerDirectoryStream short_one(nullptr, nullptr);
  std::vector<uint8_t> truncated = Directory(entries);
  StoreU32Le(4, truncated.data());
  ASSERT_TRUE(short_one.Feed(0, truncated).ok());
  EXPECT_FALSE(short_one.finished());
  // Encoding refuses what it could not parse back.
  std::vector<uint8_t> out(kMaxPeerDirectoryEntryBytes);
  size_t n = 0;
  EXPECT_EQ(EncodePeerDirectoryEntry(1, {}, entries[0].key, out, &n), Status::InvalidArgument());
  EXPECT_EQ(EncodePeerDirectoryEntry(1, entries[0].cert, ConstByteSpan(entries[0].key).first(33), out, &n),
            Status::InvalidArgument());
  EXPECT_EQ(EncodePeerDirectoryEntry(1, entries[0].cert, entries[0].key, ByteSpan(out).first(20), &n),
            Status::ResourceExhausted());
}

// Found by tests/fuzz/fuzz_peer_directory: after a refused entry the
// stream's state is mid-entry, and bytes fed at the next offset used to be
// taken from there: past an out-of-order id they were written one past the
// job key (UBSan: index 65 of pb_byte_t[65]), past a refused header with a
// large certificate size beyond certificate_der. Errors are now sticky.
TEST(PeerDirectoryTest, AStreamThatRefusedAnEntryRefusesEveryLaterByte) {
  const std::vector<Entry> entries = SomeEntries(3, 3);
  // Ids out of order: the second entry is refused when its last byte comes.
  std::vector<Entry> swapped = entries;
  std::swap(swapped[0].id, swapped[1].id);
  std::vector<uint8_t> bytes = Directory(swapped);
  const size_t first_two = 4 + 2 * kPeerDirectoryEntryHeaderBytes + swapped[0].cert.size() + swapped[1].cert.size() +
                           2 * kJobKeyBytes;
  PeerDirectoryStream stream(nullptr, nullptr);
  EXPECT_EQ(stream.Feed(0, ConstByteSpan(bytes).first(first_two)), Status::DataLoss());
  EXPECT_EQ(stream.Feed(first_two, ConstByteSpan(bytes).subspan(first_two)), Status::DataLoss());
  // A refused header (certificate size above the limit), then more bytes.
  bytes = Directory(entries);
  StoreU16Le(static_cast<uint16_t>(kMaxCertificateDerBytes + 500), bytes.data() + 4 + 4);
  PeerDirectoryStream header(nullptr, nullptr);
  EXPECT_EQ(header.Feed(0, ConstByteSpan(bytes).first(4 + kPeerDirectoryEntryHeaderBytes)), Status::DataLoss());
  EXPECT_EQ(header.Feed(4 + kPeerDirectoryEntryHeaderBytes,
                        ConstByteSpan(bytes).subspan(4 + kPeerDirectoryEntryHeaderBytes)),
            Status::DataLoss());
  EXPECT_EQ(header.entries(), 0u);
  // Reset starts afresh.
  header.Reset();
  const std::vector<uint8_t> good = Directory(entries);
  EXPECT_TRUE(header.Feed(0, good).ok());
  EXPECT_TRUE(header.finished());
}

// Also found by the fuzz target: an empty transfer completes at its header,
// but a directory has at least its 4-byte count; the receiver used to
// accept it and then wait for ever, never complete.
TEST(PeerDirectoryTest, AnEmptyDirectoryTransferIsRefusedAtItsHeader) {
  PeerDirectoryReceiver receiver(nullptr, nullptr);
  ChunkSender sender(ConstByteSpan(), 7, kPeerDirectoryArtefact);
  nodefl_wire_ChunkHeader h;
  ASSERT_TRUE(sender.MakeHeader(&h).ok());
  EXPECT_EQ(receiver.OnHeader(h), Status::DataLoss());
  EXPECT_FALSE(receiver.complete());
}

}  // namespace
}  // namespace nodefl::protocol
