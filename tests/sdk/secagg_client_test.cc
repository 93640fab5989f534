// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The device's side of secure aggregation (sdk/secagg aggregation_client.h)
// against the contract (protocol/secagg/aggregation_format.h), with the
// test playing the server by hand: full rounds on a small fleet (robust
// and paper mode, one device dropping after masking) whose sum, unmasked
// with nothing but what the devices sent, equals the inputs' sum; and the
// refusals that keep an input hidden: never both shares of one peer, never
// shares of a peer outside the mask set, a mask set naming a peer that got
// no shares, replays, stale and foreign messages. Runs on x86-64, aarch64
// and armhf.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/random/drbg.h"
#include "nodefl/secagg/aggregation_client.h"
#include "nodefl/secagg/masks.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"

namespace nodefl::secagg {
namespace {

constexpr uint32_t kLength = 2500;  // three upload runs
constexpr uint64_t kRound = (uint64_t{7} << 32) | 1;

struct Record {
  uint32_t kind = 0;
  std::vector<uint8_t> bytes;
};

// One device: its client, its memory, its input.
struct Device {
  Device(uint32_t own, uint32_t capacity, uint64_t seed) : id(own), peers(capacity), shares(2 * capacity), points(capacity),
                                                          vector(kLength) {
    EXPECT_TRUE(random.SeedDeterministic(seed).ok());
    AggregationMemory m{Span<AggregationPeer>(peers), Span<Share>(shares), Span<uint64_t>(points),
                        Span<uint32_t>(vector)};
    client = std::make_unique<AggregationClient>(own, m, random);
    input.resize(kLength);
    for (uint32_t i = 0; i < kLength; ++i) input[i] = own * 1000003u + i * 7919u;
  }
  uint32_t id;
  Drbg random;
  std::vector<AggregationPeer> peers;
  std::vector<Share> shares;
  std::vector<uint64_t> points;
  std::vector<uint32_t> vector;
  std::vector<uint32_t> input;
  std::unique_ptr<AggregationClient> client;
  bool alive = true;
};

// What the test's "server" collected from the devices.
struct Collected {
  std::map<uint32_t, std::vector<uint8_t>> keys;       // round public keys (kAggKey)
  std::map<uint32_t, std::vector<bool>> reached;       // their bitmaps: whom each one's messages went to
  std::map<uint32_t, std::vector<uint32_t>> masked;    // assembled uploads
  std::map<uint32_t, std::vector<Share>> self_shares;  // per owner
  std::map<uint32_t, std::vector<Share>> secret_shares;
  std::map<uint32_t, uint32_t> refusals;
};

class Fleet {
 public:
  Fleet(uint32_t n, AggMode mode, uint16_t threshold) : mode_(mode), threshold_(threshold) {
    for (uint32_t id = 0; id < n; ++id) devices_.push_back(std::make_unique<Device>(id, n, 100 + id));
  }
  Device& at(uint32_t id) { return *devices_[id]; }
  uint32_t size() const { return static_cast<uint32_t>(devices_.size()); }
  Collected& collected() { return collected_; }

  std::vector<uint32_t> PeersOf(uint32_t id) const {
    std::vector<uint32_t> p;
    for (uint32_t v = 0; v < devices_.size(); ++v) {
      if (v != id) p.push_back(v);
    }
    return p;
  }

  void Start() {
    for (auto& d : devices_) {
      AggStart s;
      s.aggregation = 1;
      s.round = kRound;
      s.length = kLength;
      s.peer_count = size() - 1;
      s.threshold = threshold_;
      s.mode = mode_;
      uint8_t rec[kAggStartBytes];
      EncodeAggStart(s, rec);
      ASSERT_TRUE(d->client->OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
      std::vector<uint32_t> peers = PeersOf(d->id);
      std::vector<uint8_t> run(8 + 4 * peers.size());
      ASSERT_TRUE(EncodeAggRun(1, 0, Span<const uint32_t>(peers), ByteSpan(run)).ok());
      ASSERT_TRUE(d->client->OnRecord(kAggPeers, ConstByteSpan(run)).ok());
      ASSERT_TRUE(d->client->SetInput(Span<const uint32_t>(d->input)).ok());
    }
  }

  // Drains every live device's output: peer messages delivered at once,
  // records to the server collected.
  void Pump() {
    bool moved = true;
    while (moved) {
      moved = false;
      for (auto& d : devices_) {
        if (!d->alive) continue;
        AggregationClient::Outgoing out;
        while (d->client->Peek(&out)) {
          moved = true;
          if (out.to_peer) {
            Device& to = at(out.peer);
            // A device that left refuses what still comes; the others take it.
            const bool left = to.client->state() == AggregationClient::State::kRefused;
            if (to.alive) {
              EXPECT_EQ(to.client->OnPeerMessage(d->id, out.bytes).ok(), !left);
            }
          } else {
            Collect(d->id, out.kind, out.bytes);
          }
          d->client->Advance();
        }
      }
    }
  }

  void SendMaskSets(const std::vector<uint32_t>& finished) {
    for (uint32_t u : finished) {
      std::vector<uint32_t> peers = PeersOf(u);
      std::vector<uint8_t> rec(MaskSetBytes(static_cast<uint32_t>(peers.size())), 0);
      StoreU32Le(1, rec.data());
      for (uint32_t i = 0; i < peers.size(); ++i) {
        if (collected_.keys.count(peers[i]) != 0) SetMaskSetBit(ByteSpan(rec), i);
      }
      EXPECT_TRUE(at(u).client->OnRecord(kAggMaskSet, ConstByteSpan(rec)).ok());
    }
  }

  void SendReveals(const std::vector<uint32_t>& masked_set) {
    for (const auto& [u, vec] : collected_.masked) {
      std::vector<uint32_t> peers = PeersOf(u);
      std::vector<uint8_t> rec(RevealBytes(static_cast<uint32_t>(peers.size())), 0);
      StoreU32Le(1, rec.data());
      for (uint32_t i = 0; i < peers.size(); ++i) {
        const uint32_t v = peers[i];
        bool in_mask_set = false;
        for (uint32_t m : masked_set) in_mask_set |= m == v;
        if (!in_mask_set) continue;
        SetReveal(ByteSpan(rec), i,
                  collected_.masked.count(v) != 0 ? RevealCode::kSelfSeed : RevealCode::kRoundSecret);
      }
      EXPECT_TRUE(at(u).client->OnRecord(kAggReveal, ConstByteSpan(rec)).ok());
    }
  }

 private:
  void Collect(uint32_t from, uint32_t kind, ConstByteSpan bytes) {
    if (kind == kAggKey) {
      const uint32_t peers = size() - 1;
      Result<AggKey> k = DecodeAggKey(bytes, peers);
      ASSERT_TRUE(k.ok());
      collected_.keys[from].assign(k.value().public_key, k.value().public_key + kAggPublicKeyBytes);
      std::vector<bool>& r = collected_.reached[from];
      for (uint32_t i = 0; i < peers; ++i) r.push_back(AggKeyReached(bytes, i));
    } else if (kind == kAggMasked) {
      Result<AggRun> r = DecodeAggRun(bytes);
      ASSERT_TRUE(r.ok());
      std::vector<uint32_t>& v = collected_.masked[from];
      v.resize(kLength);
      for (uint32_t i = 0; i < r.value().count(); ++i) v[r.value().offset + i] = r.value().at(i);
    } else if (kind == kAggShares) {
      Result<AggSharesView> view = DecodeAggShares(bytes);
      ASSERT_TRUE(view.ok());
      for (uint16_t i = 0; i < view.value().count; ++i) {
        Result<RevealedShare> s = RevealedShareAt(view.value(), i);
        ASSERT_TRUE(s.ok());
        Share share;
        share.x = uint64_t{from} + 1;
        for (size_t w = 0; w < kShareWords; ++w) share.y[w] = s.value().y[w];
        (s.value().code == RevealCode::kSelfSeed ? collected_.self_shares : collected_.secret_shares)[s.value().peer]
            .push_back(share);
      }
    } else if (kind == kAggRefuse) {
      ++collected_.refusals[from];
    } else {
      ADD_FAILURE() << "unexpected record kind " << kind;
    }
  }

  AggMode mode_;
  uint16_t threshold_;
  std::vector<std::unique_ptr<Device>> devices_;
  Collected collected_;
};

// The server's arithmetic done by hand from what was collected: the
// reporters' masked vectors, minus their self masks, minus the pair masks
// they hold with `dropped` devices (rebuilt from those devices' secrets).
std::vector<uint32_t> Unmasked(Fleet& f, AggMode mode, uint16_t threshold, const std::vector<uint32_t>& dropped) {
  Collected& c = f.collected();
  std::vector<uint32_t> sum(kLength, 0);
  Drbg random;
  EXPECT_TRUE(random.SeedDeterministic(99).ok());
  for (const auto& [u, v] : c.masked) {
    for (uint32_t i = 0; i < kLength; ++i) sum[i] += v[i];
    if (mode == AggMode::kPaper) continue;
    MaskSeed b;
    EXPECT_TRUE(ReconstructSecret(Span<const Share>(c.self_shares[u]), threshold, ByteSpan(b.bytes, kSeedBytes)).ok())
        << "self seed of " << u;
    EXPECT_TRUE(ApplyMask(b, kRound, MaskSign::kSubtract, Span<uint32_t>(sum)).ok());
  }
  for (uint32_t v : dropped) {
    uint8_t secret[kRoundSecretBytes];
    EXPECT_TRUE(ReconstructSecret(Span<const Share>(c.secret_shares[v]), threshold, ByteSpan(secret, sizeof secret)).ok());
    RoundKeyPair rebuilt;
    EXPECT_TRUE(rebuilt.FromSecret(ConstByteSpan(secret, sizeof secret)).ok());
    EXPECT_EQ(std::vector<uint8_t>(rebuilt.public_key().begin(), rebuilt.public_key().end()), c.keys[v]);
    for (const auto& [u, vec] : c.masked) {
      MaskSeed s;
      EXPECT_TRUE(PairMaskSeed(rebuilt, v, ConstByteSpan(c.keys[u].data(), c.keys[u].size()), u, kRound,
                               &crypto::DrbgRandom, &random, &s)
                      .ok());
      EXPECT_TRUE(ApplyMask(s, kRound, Opposite(PairSign(u, v)), Span<uint32_t>(sum)).ok());
    }
  }
  return sum;
}

std::vector<uint32_t> PlainSum(Fleet& f) {
  std::vector<uint32_t> sum(kLength, 0);
  for (const auto& [u, v] : f.collected().masked) {
    for (uint32_t i = 0; i < kLength; ++i) sum[i] += f.at(u).input[i];
  }
  return sum;
}

TEST(SecaggClientTest, RobustRoundSumsTheReportersAndRevealsOneShareKindPerPeer) {
  Fleet f(7, AggMode::kRobust, 4);
  f.Start();
  f.Pump();
  ASSERT_EQ(f.collected().keys.size(), 7u);
  std::vector<uint32_t> all;
  for (uint32_t id = 0; id < 7; ++id) all.push_back(id);
  f.SendMaskSets(all);
  // Device 3 masks and uploads nothing: it vanishes after step 1.
  f.at(3).alive = false;
  f.Pump();
  ASSERT_EQ(f.collected().masked.size(), 6u);
  for (const auto& [u, v] : f.collected().masked) EXPECT_NE(v, f.at(u).input) << "device " << u << " sent its input";
  f.SendReveals(all);
  f.Pump();
  EXPECT_TRUE(f.collected().self_shares.count(3) == 0);
  EXPECT_EQ(f.collected().secret_shares[3].size(), 6u);
  for (uint32_t u = 0; u < 7; ++u) {
    if (u != 3) {
      EXPECT_EQ(f.at(u).client->state(), AggregationClient::State::kDone) << u;
    }
  }
  EXPECT_EQ(Unmasked(f, AggMode::kRobust, 4, {3}), PlainSum(f));
}

TEST(SecaggClientTest, PaperModeHasNoSharesAndTheMasksCancel) {
  Fleet f(5, AggMode::kPaper, 0);
  f.Start();
  f.Pump();
  f.SendMaskSets({0, 1, 2, 3, 4});
  f.Pump();
  ASSERT_EQ(f.collected().masked.size(), 5u);
  for (uint32_t u = 0; u < 5; ++u) EXPECT_EQ(f.at(u).client->state(), AggregationClient::State::kDone);
  EXPECT_EQ(Unmasked(f, AggMode::kPaper, 0, {}), PlainSum(f));
}

TEST(SecaggClientTest, PaperModeRefusesAMaskSetThatLeavesAPeerOut) {
  Fleet f(4, AggMode::kPaper, 0);
  f.Start();
  f.Pump();
  std::vector<uint8_t> rec(MaskSetBytes(3), 0);
  StoreU32Le(1, rec.data());
  SetMaskSetBit(ByteSpan(rec), 0);
  SetMaskSetBit(ByteSpan(rec), 1);
  ASSERT_TRUE(f.at(0).client->OnRecord(kAggMaskSet, ConstByteSpan(rec)).ok());
  EXPECT_EQ(f.at(0).client->state(), AggregationClient::State::kRefused);
  f.Pump();
  EXPECT_EQ(f.collected().refusals[0], 1u);
  EXPECT_EQ(f.collected().masked.count(0), 0u);
}

// Brings a fleet to the point where every device has uploaded.
void UploadAll(Fleet& f) {
  f.Start();
  f.Pump();
  std::vector<uint32_t> all;
  for (uint32_t id = 0; id < f.size(); ++id) all.push_back(id);
  f.SendMaskSets(all);
  f.Pump();
  ASSERT_EQ(f.collected().masked.size(), f.size());
}

TEST(SecaggClientTest, AskingForTheOtherShareOfAPeerIsRefusedWholeAndRevealsNothing) {
  Fleet f(5, AggMode::kRobust, 3);
  UploadAll(f);
  AggregationClient& c = *f.at(0).client;
  // First request: device 1's self seed (peer index 0).
  std::vector<uint8_t> rec(RevealBytes(4), 0);
  StoreU32Le(1, rec.data());
  SetReveal(ByteSpan(rec), 0, RevealCode::kSelfSeed);
  ASSERT_TRUE(c.OnRecord(kAggReveal, ConstByteSpan(rec)).ok());
  f.Pump();
  ASSERT_EQ(f.collected().self_shares[1].size(), 1u);
  // Then the same peer's round secret, together with an innocent entry.
  std::vector<uint8_t> second(RevealBytes(4), 0);
  StoreU32Le(1, second.data());
  SetReveal(ByteSpan(second), 0, RevealCode::kRoundSecret);
  SetReveal(ByteSpan(second), 1, RevealCode::kSelfSeed);
  ASSERT_TRUE(c.OnRecord(kAggReveal, ConstByteSpan(second)).ok());
  EXPECT_EQ(c.state(), AggregationClient::State::kRefused);
  f.Pump();
  EXPECT_EQ(f.collected().secret_shares.count(1), 0u);
  EXPECT_EQ(f.collected().self_shares.count(2), 0u) << "part of a refused request was revealed";
  EXPECT_EQ(f.collected().refusals[0], 1u);
}

TEST(SecaggClientTest, SharesOfAPeerOutsideTheMaskSetAreNeverRevealed) {
  Fleet f(5, AggMode::kRobust, 3);
  f.Start();
  f.Pump();
  // Device 0's mask set leaves out device 4 (index 3).
  std::vector<uint8_t> rec(MaskSetBytes(4), 0);
  StoreU32Le(1, rec.data());
  for (uint32_t i = 0; i < 3; ++i) SetMaskSetBit(ByteSpan(rec), i);
  ASSERT_TRUE(f.at(0).client->OnRecord(kAggMaskSet, ConstByteSpan(rec)).ok());
  f.Pump();
  ASSERT_EQ(f.collected().masked.count(0), 1u);
  std::vector<uint8_t> ask(RevealBytes(4), 0);
  StoreU32Le(1, ask.data());
  SetReveal(ByteSpan(ask), 3, RevealCode::kRoundSecret);
  ASSERT_TRUE(f.at(0).client->OnRecord(kAggReveal, ConstByteSpan(ask)).ok());
  EXPECT_EQ(f.at(0).client->state(), AggregationClient::State::kRefused);
  f.Pump();
  EXPECT_EQ(f.collected().secret_shares.count(4), 0u);
}

TEST(SecaggClientTest, AMaskSetNamingAPeerThatGotNoSharesIsRefused) {
  Fleet f(4, AggMode::kRobust, 2);
  f.Start();
  // Device 0 cannot reach device 2 (peer index 1): the job skips it.
  AggregationClient& c = *f.at(0).client;
  AggregationClient::Outgoing out;
  while (c.Peek(&out) && out.to_peer) {
    if (out.peer == 2) {
      c.SkipPeer();
    } else {
      ASSERT_TRUE(f.at(out.peer).client->OnPeerMessage(0, out.bytes).ok());
      c.Advance();
    }
  }
  f.Pump();
  ASSERT_EQ(f.collected().keys.count(0), 1u);
  // Its key record tells the server whom it reached.
  EXPECT_EQ(f.collected().reached[0], (std::vector<bool>{true, false, true}));
  std::vector<uint8_t> rec(MaskSetBytes(3), 0);
  StoreU32Le(1, rec.data());
  for (uint32_t i = 0; i < 3; ++i) SetMaskSetBit(ByteSpan(rec), i);
  ASSERT_TRUE(c.OnRecord(kAggMaskSet, ConstByteSpan(rec)).ok());
  EXPECT_EQ(c.state(), AggregationClient::State::kRefused);
}

TEST(SecaggClientTest, TooFewPeersReachedMeansNoKeyAndARefusal) {
  Fleet f(4, AggMode::kRobust, 3);
  f.Start();
  AggregationClient& c = *f.at(0).client;
  AggregationClient::Outgoing out;
  while (c.Peek(&out) && out.to_peer) c.SkipPeer();
  f.Pump();
  EXPECT_EQ(f.collected().keys.count(0), 0u);
  EXPECT_EQ(f.collected().refusals[0], 1u);
}

TEST(SecaggClientTest, ReplayedStaleForeignAndMalformedPeerMessagesAreRefused) {
  Fleet f(4, AggMode::kRobust, 2);
  f.Start();
  // Capture device 1's message to device 0.
  AggregationClient& c1 = *f.at(1).client;
  AggregationClient::Outgoing out;
  std::vector<uint8_t> to0;
  while (c1.Peek(&out) && out.to_peer) {
    if (out.peer == 0) to0.assign(out.bytes.begin(), out.bytes.end());
    c1.Advance();
  }
  ASSERT_EQ(to0.size(), kAggPeerMessageBytes);
  AggregationClient& c0 = *f.at(0).client;
  ASSERT_TRUE(c0.OnPeerMessage(1, ConstByteSpan(to0)).ok());
  EXPECT_EQ(c0.OnPeerMessage(1, ConstByteSpan(to0)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(c0.stats().replays, 1u);
  // From a device that is not a peer (the relay names the sender).
  EXPECT_FALSE(c0.OnPeerMessage(9, ConstByteSpan(to0)).ok());
  // Another round, a cut message, a bad tag.
  std::vector<uint8_t> other = to0;
  other[5] ^= 1;
  EXPECT_FALSE(f.at(2).client->OnPeerMessage(1, ConstByteSpan(other)).ok());
  EXPECT_FALSE(c0.OnPeerMessage(2, ConstByteSpan(to0.data(), to0.size() - 1)).ok());
  std::vector<uint8_t> tag = to0;
  tag[0] = 0;
  EXPECT_FALSE(c0.OnPeerMessage(2, ConstByteSpan(tag)).ok());
  EXPECT_GE(c0.stats().messages_refused, 3u);
}

TEST(SecaggClientTest, MalformedAndOutOfOrderServerRecordsAreRefused) {
  Fleet f(4, AggMode::kRobust, 2);
  AggregationClient& c = *f.at(0).client;
  uint8_t mask[8] = {1, 0, 0, 0, 0xFF};
  EXPECT_FALSE(c.OnRecord(kAggMaskSet, ConstByteSpan(mask, 5)).ok());  // before any start
  f.Start();
  // A repeated start (a replay) and one with threshold above the peers.
  AggStart s;
  s.aggregation = 1;
  s.round = kRound;
  s.length = kLength;
  s.peer_count = 3;
  s.threshold = 2;
  uint8_t rec[kAggStartBytes];
  EncodeAggStart(s, rec);
  EXPECT_FALSE(c.OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
  s.aggregation = 2;
  s.threshold = 4;
  EncodeAggStart(s, rec);
  EXPECT_FALSE(c.OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
  // Peers out of order or naming itself.
  Fleet g(4, AggMode::kRobust, 2);
  AggregationClient& d = *g.at(0).client;
  s.aggregation = 1;
  s.threshold = 2;
  EncodeAggStart(s, rec);
  ASSERT_TRUE(d.OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
  const uint32_t bad[] = {2, 1, 3};
  std::vector<uint8_t> run(8 + 12);
  ASSERT_TRUE(EncodeAggRun(1, 0, Span<const uint32_t>(bad, 3), ByteSpan(run)).ok());
  EXPECT_FALSE(d.OnRecord(kAggPeers, ConstByteSpan(run)).ok());
  const uint32_t self[] = {0, 1, 2};
  ASSERT_TRUE(EncodeAggRun(1, 0, Span<const uint32_t>(self, 3), ByteSpan(run)).ok());
  EXPECT_FALSE(d.OnRecord(kAggPeers, ConstByteSpan(run)).ok());
  EXPECT_GE(c.stats().records_refused + d.stats().records_refused, 5u);
}

TEST(SecaggClientTest, APeerMessageBeforeTheStartIsKept) {
  Fleet f(3, AggMode::kRobust, 2);
  // Start devices 1 and 2 only; device 0 hears from them before its own start.
  std::vector<std::vector<uint8_t>> early;
  for (uint32_t id = 1; id < 3; ++id) {
    Device& d = f.at(id);
    AggStart s;
    s.aggregation = 1;
    s.round = kRound;
    s.length = kLength;
    s.peer_count = 2;
    s.threshold = 2;
    uint8_t rec[kAggStartBytes];
    EncodeAggStart(s, rec);
    ASSERT_TRUE(d.client->OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
    std::vector<uint32_t> peers = f.PeersOf(id);
    std::vector<uint8_t> run(8 + 4 * peers.size());
    ASSERT_TRUE(EncodeAggRun(1, 0, Span<const uint32_t>(peers), ByteSpan(run)).ok());
    ASSERT_TRUE(d.client->OnRecord(kAggPeers, ConstByteSpan(run)).ok());
    AggregationClient::Outgoing out;
    while (d.client->Peek(&out) && out.to_peer) {
      if (out.peer == 0) {
        ASSERT_TRUE(f.at(0).client->OnPeerMessage(id, out.bytes).ok());
      }
      d.client->Advance();
    }
  }
  AggStart s;
  s.aggregation = 1;
  s.round = kRound;
  s.length = kLength;
  s.peer_count = 2;
  s.threshold = 2;
  uint8_t rec[kAggStartBytes];
  EncodeAggStart(s, rec);
  AggregationClient& c = *f.at(0).client;
  ASSERT_TRUE(c.OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
  std::vector<uint32_t> peers = f.PeersOf(0);
  std::vector<uint8_t> run(8 + 4 * peers.size());
  ASSERT_TRUE(EncodeAggRun(1, 0, Span<const uint32_t>(peers), ByteSpan(run)).ok());
  ASSERT_TRUE(c.OnRecord(kAggPeers, ConstByteSpan(run)).ok());
  for (const AggregationPeer& p : c.peers()) EXPECT_TRUE(p.message_received) << p.id;
}

TEST(SecaggClientTest, AnAggregationTooBigForTheDeviceIsRefusedNotOverrun) {
  Device d(0, 2, 1);
  AggStart s;
  s.aggregation = 1;
  s.round = kRound;
  s.length = kLength;
  s.peer_count = 3;  // room for 2
  s.threshold = 2;
  uint8_t rec[kAggStartBytes];
  EncodeAggStart(s, rec);
  ASSERT_TRUE(d.client->OnRecord(kAggStart, ConstByteSpan(rec, sizeof rec)).ok());
  EXPECT_EQ(d.client->state(), AggregationClient::State::kRefused);
  EXPECT_EQ(d.client->refusal().code(), StatusCode::kResourceExhausted);
  AggregationClient::Outgoing out;
  ASSERT_TRUE(d.client->Peek(&out));
  EXPECT_EQ(out.kind, kAggRefuse);
}

}  // namespace
}  // namespace nodefl::secagg
