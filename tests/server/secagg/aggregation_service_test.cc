// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's AggregationService (server/secagg) against devices simulated
// in this file with the SDK's arithmetic (round keys, Shamir shares with
// x = holder id + 1, self and pair masks): each simulated device reads the
// service's records and answers exactly as the contract
// (protocol/secagg/aggregation_format.h) says, and can drop at any step. The
// peer messages of step 1 go straight from device to device (the relay and
// its sealing are the job's business).
//
// What is checked: the sum equals the plaintext sum of the devices the
// service says it included, at 0 %, 10 % and 30 % dropouts at each step on
// the sparse and the full graph, with an independent prediction of who is
// excluded and of whether every secret keeps enough holders; the aborts
// (too few reporters before any reveal, secrets that cannot be rebuilt,
// paper mode's no-dropout rule, cancel); that the server's view does not
// depend on one device's input; refused, malformed and replayed records;
// deadlines and late uploads; refused requests and the start records.
#include "nodefl/server/secagg/aggregation_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/secagg/masks.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"

namespace nodefl::server::secagg {
namespace {
namespace sa = nodefl::secagg;
using Outcome = AggregationService::Outcome;

const sa::FixedPoint kCode{2.0f, 4096.0f};
constexpr uint64_t kTimeout = 1'000'000;  // each step's deadline, µs

// Where a simulated device stops answering.
enum class DropAt : uint8_t { kNever, kBeforeKey, kBeforeUpload, kBeforeReveal };

// One device, played by the test: the contract's device side, in process.
struct SimDevice {
  uint32_t id = 0;
  std::unique_ptr<Drbg> random;
  std::vector<float> input;
  std::vector<uint32_t> codes;  // the encoded input
  DropAt drop = DropAt::kNever;
  bool unreachable_when_dropping = false;  // the harness then calls MarkUnreachable
  bool hold_upload = false;                // masks, but keeps its runs in `held` for the test to send
  std::set<uint32_t> skip;                 // peers it cannot key: no step-1 message goes to them

  // The aggregation it is in.
  sa::AggStart start;
  std::vector<uint32_t> peers;
  uint32_t peers_known = 0;
  std::unique_ptr<sa::RoundKeyPair> keys;
  sa::MaskSeed self;
  std::map<uint32_t, sa::AggPeerMessage> from_peers;
  std::vector<uint32_t> mask_set;
  std::vector<uint32_t> masked;
  std::vector<std::vector<uint8_t>> held;
  std::set<uint32_t> revealed_self, revealed_secret;
  bool gone = false;    // dropped: answers nothing more
  bool forgot = false;  // got kAggAbort
  int abort_code = -1;
  bool wants_unreachable = false;
};

struct DeviceRecord {
  uint32_t device = 0;
  uint32_t kind = 0;
  std::vector<uint8_t> bytes;
  Outcome outcome = Outcome::kAccepted;
};

// The devices and the service, and every record between them.
class Harness {
 public:
  Harness(AggregationService& service, const std::vector<uint32_t>& ids, uint32_t length, uint64_t seed)
      : service_(service) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-kCode.clip, kCode.clip);
    for (uint32_t id : ids) {
      SimDevice& d = devices_[id];
      d.id = id;
      d.random = std::make_unique<Drbg>();
      EXPECT_TRUE(d.random->SeedDeterministic(seed, id).ok());
      d.input.resize(length);
      for (float& v : d.input) v = u(rng);
      SetCodes(d, {});
    }
  }

  SimDevice& device(uint32_t id) { return devices_.at(id); }
  std::map<uint32_t, SimDevice>& devices() { return devices_; }
  // Gives a device its codes directly (or from its float input when empty).
  void SetCodes(SimDevice& d, std::vector<uint32_t> codes) {
    if (codes.empty()) {
      codes.resize(d.input.size());
      EXPECT_TRUE(sa::EncodeFixedPoint(kCode, Span<const float>(d.input), Span<uint32_t>(codes)).ok());
    }
    d.codes = std::move(codes);
  }

  // Called after the service answered each device record (tests inject here).
  std::function<void(const DeviceRecord&)> after_record;

  // Delivers everything until nobody has anything more to say.
  void Pump() {
    for (bool moved = true; moved;) {
      moved = false;
      for (AggRecord& r : service_.TakeRecords()) {
        moved = true;
        to_devices.push_back(r);
        auto it = devices_.find(r.device);
        if (it != devices_.end()) Receive(it->second, r);
      }
      for (auto& [id, d] : devices_) {
        if (d.wants_unreachable) {
          d.wants_unreachable = false;
          service_.MarkUnreachable(id, now);
          moved = true;
        }
      }
      std::vector<DeviceRecord> outgoing = std::exchange(outbox_, {});
      for (DeviceRecord& r : outgoing) {
        moved = true;
        r.outcome = service_.OnRecord(r.device, r.kind, r.bytes, now);
        to_server.push_back(r);
        if (after_record) after_record(to_server.back());
      }
    }
  }

  // Pumps, and lets each step's deadline pass until the aggregation settles.
  void RunToEnd(uint32_t aggregation) {
    for (int step = 0; step < 8; ++step) {
      Pump();
      if (service_.result(aggregation).settled()) return;
      now += kTimeout;
      service_.Poll(now);
    }
    ADD_FAILURE() << "aggregation " << aggregation << " did not settle";
  }

  // Sends a device record directly (as the device would), logged.
  Outcome Inject(uint32_t device, uint32_t kind, std::vector<uint8_t> bytes) {
    DeviceRecord r{device, kind, std::move(bytes), Outcome::kAccepted};
    r.outcome = service_.OnRecord(r.device, r.kind, r.bytes, now);
    injected.push_back(r);
    return r.outcome;
  }

  size_t CountSent(uint32_t kind) const {
    return static_cast<size_t>(
        std::count_if(to_devices.begin(), to_devices.end(), [&](const AggRecord& r) { return r.kind == kind; }));
  }
  // The abort code each device was sent (-1: none); fails on a second one.
  std::map<uint32_t, int> AbortsSent() const {
    std::map<uint32_t, int> codes;
    for (const AggRecord& r : to_devices) {
      if (r.kind != sa::kAggAbort) continue;
      EXPECT_EQ(codes.count(r.device), 0u) << "device " << r.device << " told twice";
      codes[r.device] = r.bytes.at(4);
    }
    return codes;
  }

  uint64_t now = 0;
  std::vector<AggRecord> to_devices;
  std::vector<DeviceRecord> to_server;
  std::vector<DeviceRecord> injected;

 private:
  void Send(SimDevice& d, uint32_t kind, std::vector<uint8_t> bytes) {
    outbox_.push_back(DeviceRecord{d.id, kind, std::move(bytes), Outcome::kAccepted});
  }
  void GoSilent(SimDevice& d) {
    d.gone = true;
    if (d.unreachable_when_dropping) d.wants_unreachable = true;
  }

  void Receive(SimDevice& d, const AggRecord& r) {
    if (d.gone || d.forgot) return;
    const ConstByteSpan bytes(r.bytes.data(), r.bytes.size());
    switch (r.kind) {
      case sa::kAggStart: {
        auto start = sa::DecodeAggStart(bytes);
        ASSERT_TRUE(start.ok());
        d.start = *start;
        d.peers.assign(start->peer_count, 0);
        d.peers_known = 0;
        break;
      }
      case sa::kAggPeers: {
        auto run = sa::DecodeAggRun(bytes);
        ASSERT_TRUE(run.ok());
        ASSERT_LE(uint64_t{run->offset} + run->count(), d.peers.size());
        for (uint32_t k = 0; k < run->count(); ++k) d.peers[run->offset + k] = run->at(k);
        d.peers_known += run->count();
        if (d.peers_known == d.peers.size()) StepOne(d);
        break;
      }
      case sa::kAggMaskSet:
        ASSERT_EQ(r.bytes.size(), sa::MaskSetBytes(d.start.peer_count));
        d.mask_set.clear();
        for (uint32_t i = 0; i < d.start.peer_count; ++i) {
          if (sa::MaskSetBit(bytes, i)) d.mask_set.push_back(d.peers[i]);
        }
        StepTwo(d);
        break;
      case sa::kAggReveal:
        ASSERT_EQ(r.bytes.size(), sa::RevealBytes(d.start.peer_count));
        StepThree(d, bytes);
        break;
      case sa::kAggAbort:
        d.forgot = true;
        d.abort_code = r.bytes.at(4);
        break;
      default:
        ADD_FAILURE() << "unexpected kind " << r.kind;
    }
  }

  bool robust(const SimDevice& d) const { return d.start.mode == sa::AggMode::kRobust; }

  // A fresh round key pair and self seed, both shared t-of-k among the
  // peers (robust), one peer message each, then the key.
  void StepOne(SimDevice& d) {
    if (d.drop == DropAt::kBeforeKey) return GoSilent(d);
    d.keys = std::make_unique<sa::RoundKeyPair>();
    ASSERT_TRUE(d.keys->Generate(&crypto::DrbgRandom, d.random.get()).ok());
    const size_t k = d.peers.size();
    std::vector<sa::Share> self_shares(k), secret_shares(k);
    if (robust(d)) {
      ASSERT_TRUE(d.random->Fill(Span<uint8_t>(d.self.bytes, sa::kSeedBytes)).ok());
      std::vector<uint64_t> xs;
      for (uint32_t p : d.peers) xs.push_back(uint64_t{p} + 1);
      ASSERT_TRUE(sa::ShareSecret(ConstByteSpan(d.self.bytes, sa::kSeedBytes), d.start.threshold,
                                  Span<const uint64_t>(xs), *d.random, Span<sa::Share>(self_shares))
                      .ok());
      ASSERT_TRUE(sa::ShareSecret(d.keys->secret(), d.start.threshold, Span<const uint64_t>(xs), *d.random,
                                  Span<sa::Share>(secret_shares))
                      .ok());
    }
    for (size_t i = 0; i < k; ++i) {
      if (d.skip.count(d.peers[i]) != 0) continue;
      sa::AggPeerMessage m;
      m.aggregation = d.start.aggregation;
      m.round = d.start.round;
      std::copy(d.keys->public_key().begin(), d.keys->public_key().end(), m.public_key);
      m.has_shares = robust(d);
      std::copy(std::begin(self_shares[i].y), std::end(self_shares[i].y), m.self_seed);
      std::copy(std::begin(secret_shares[i].y), std::end(secret_shares[i].y), m.round_secret);
      uint8_t sealed[sa::kAggPeerMessageBytes];
      sa::EncodeAggPeerMessage(m, sealed);
      SimDevice& peer = devices_.at(d.peers[i]);
      auto opened = sa::DecodeAggPeerMessage(ConstByteSpan(sealed, sizeof sealed));
      ASSERT_TRUE(opened.ok());
      peer.from_peers[d.id] = *opened;
    }
    sa::AggKey key;
    key.aggregation = d.start.aggregation;
    std::copy(d.keys->public_key().begin(), d.keys->public_key().end(), key.public_key);
    key.shared_with = static_cast<uint32_t>(k);
    for (uint32_t v : d.peers) key.shared_with -= d.skip.count(v) != 0 ? 1 : 0;
    std::vector<uint8_t> out(sa::AggKeyBytes(static_cast<uint32_t>(k)));
    ASSERT_TRUE(sa::EncodeAggKey(key, static_cast<uint32_t>(k), ByteSpan(out.data(), out.size())).ok());
    for (size_t i = 0; i < k; ++i) {
      if (d.skip.count(d.peers[i]) == 0) sa::SetAggKeyReached(ByteSpan(out.data(), out.size()), static_cast<uint32_t>(i));
    }
    Send(d, sa::kAggKey, std::move(out));
  }

  // codes + self mask (robust) + one pair mask per mask-set peer, uploaded
  // in runs.
  void StepTwo(SimDevice& d) {
    if (d.drop == DropAt::kBeforeUpload) return GoSilent(d);
    d.masked = d.codes;
    const uint64_t round = d.start.round;
    if (robust(d)) {
      ASSERT_TRUE(sa::ApplyMask(d.self, round, sa::MaskSign::kAdd, Span<uint32_t>(d.masked)).ok());
    }
    for (uint32_t v : d.mask_set) {
      auto it = d.from_peers.find(v);
      ASSERT_NE(it, d.from_peers.end()) << "device " << d.id << " lacks the message of mask-set peer " << v;
      sa::MaskSeed s;
      ASSERT_TRUE(sa::PairMaskSeed(*d.keys, d.id, ConstByteSpan(it->second.public_key, sa::kAggPublicKeyBytes), v,
                                   round, &crypto::DrbgRandom, d.random.get(), &s)
                      .ok());
      ASSERT_TRUE(sa::ApplyMask(s, round, sa::PairSign(d.id, v), Span<uint32_t>(d.masked)).ok());
    }
    for (size_t offset = 0; offset < d.masked.size(); offset += sa::kAggWordsPerRecord) {
      const size_t count = std::min<size_t>(sa::kAggWordsPerRecord, d.masked.size() - offset);
      std::vector<uint8_t> record(8 + 4 * count);
      ASSERT_TRUE(sa::EncodeAggRun(d.start.aggregation, static_cast<uint32_t>(offset),
                                   Span<const uint32_t>(d.masked.data() + offset, count),
                                   ByteSpan(record.data(), record.size()))
                      .ok());
      if (d.hold_upload) {
        d.held.push_back(std::move(record));
      } else {
        Send(d, sa::kAggMasked, std::move(record));
      }
    }
  }

  // For each peer the server names, the one share asked for; never both
  // kinds for one peer, never for a peer outside the mask set.
  void StepThree(SimDevice& d, ConstByteSpan reveal) {
    if (d.drop == DropAt::kBeforeReveal) return GoSilent(d);
    std::vector<sa::RevealedShare> entries;
    for (uint32_t i = 0; i < d.start.peer_count; ++i) {
      const sa::RevealCode code = sa::RevealOf(reveal, i);
      if (code == sa::RevealCode::kNothing) continue;
      const uint32_t v = d.peers[i];
      ASSERT_TRUE(std::binary_search(d.mask_set.begin(), d.mask_set.end(), v))
          << "asked about a peer outside the mask set";
      auto& mine = code == sa::RevealCode::kSelfSeed ? d.revealed_self : d.revealed_secret;
      const auto& other = code == sa::RevealCode::kSelfSeed ? d.revealed_secret : d.revealed_self;
      ASSERT_EQ(other.count(v), 0u) << "the server asked device " << d.id << " for both secrets of " << v;
      mine.insert(v);
      const sa::AggPeerMessage& m = d.from_peers.at(v);
      sa::RevealedShare e;
      e.peer = v;
      e.code = code;
      std::copy_n(code == sa::RevealCode::kSelfSeed ? m.self_seed : m.round_secret, sa::kShareWords, e.y);
      entries.push_back(e);
    }
    for (size_t first = 0; first < entries.size(); first += sa::kAggSharesPerRecord) {
      const size_t count = std::min<size_t>(sa::kAggSharesPerRecord, entries.size() - first);
      std::vector<uint8_t> record(sa::kAggSharesHeaderBytes + count * sa::kRevealedShareBytes);
      size_t at = sa::EncodeAggSharesHeader(d.start.aggregation, static_cast<uint16_t>(count), record.data());
      for (size_t k = 0; k < count; ++k) at += sa::EncodeRevealedShare(entries[first + k], record.data() + at);
      Send(d, sa::kAggShares, std::move(record));
    }
  }

  AggregationService& service_;
  std::map<uint32_t, SimDevice> devices_;
  std::vector<DeviceRecord> outbox_;
};

std::vector<uint32_t> Ids(uint32_t n) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(3 + 5 * i);  // not 0 .. n-1: ids are not indices
  return ids;
}

// The plaintext sum of `devices`' codes, mod 2^32 (what the sum must be exactly).
std::vector<uint32_t> CodeSum(Harness& h, const std::vector<uint32_t>& devices, uint32_t length) {
  std::vector<uint32_t> sum(length, 0);
  for (uint32_t id : devices) {
    for (uint32_t i = 0; i < length; ++i) sum[i] += h.device(id).codes[i];
  }
  return sum;
}

// The sum decodes to the float inputs' sum within the rounding error.
void ExpectDecodesToInputSum(Harness& h, const AggregationResult& r) {
  std::vector<float> got(r.sum.size());
  ASSERT_TRUE(sa::DecodeFixedPointSum(kCode, Span<const uint32_t>(r.sum), Span<float>(got)).ok());
  for (size_t i = 0; i < got.size(); ++i) {
    double want = 0;
    for (uint32_t id : r.included) want += h.device(id).input[i];
    ASSERT_NEAR(got[i], want, r.included.size() / (2.0 * kCode.scale) + 1e-3) << "word " << i;
  }
}

// ---- an independent prediction of an aggregation's outcome ----------------

struct Prediction {
  bool done = false;
  sa::AbortReason reason{};
  std::vector<uint32_t> excluded, included;  // ascending
};

// From the graph the service sent, the threshold and who drops where: the
// exclusion fixpoint of step 1, the reporters, and whether every secret the
// unmasking needs keeps `threshold` answering holders.
Prediction Predict(AggregationService& service, uint32_t aggregation, const std::vector<uint32_t>& ids,
                   const std::map<uint32_t, DropAt>& drops, uint32_t threshold, uint32_t min_reporters) {
  auto drops_at = [&](uint32_t id, DropAt at) {
    auto it = drops.find(id);
    return it != drops.end() && it->second == at;
  };
  std::set<uint32_t> alive;
  for (uint32_t id : ids) {
    if (!drops_at(id, DropAt::kBeforeKey)) alive.insert(id);
  }
  auto alive_peers = [&](uint32_t id) {
    std::vector<uint32_t> out;
    for (uint32_t p : service.PeersOf(aggregation, id)) {
      if (alive.count(p) != 0) out.push_back(p);
    }
    return out;
  };
  Prediction out;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t id : std::vector<uint32_t>(alive.begin(), alive.end())) {
      if (alive_peers(id).size() < threshold) {
        alive.erase(id);
        out.excluded.push_back(id);
        changed = true;
      }
    }
  }
  std::sort(out.excluded.begin(), out.excluded.end());
  std::map<uint32_t, std::vector<uint32_t>> mask_set;
  for (uint32_t id : alive) mask_set[id] = alive_peers(id);
  std::set<uint32_t> reporters, holders;
  for (uint32_t id : alive) {
    if (!drops_at(id, DropAt::kBeforeUpload)) reporters.insert(id);
  }
  for (uint32_t id : reporters) {
    if (!drops_at(id, DropAt::kBeforeReveal)) holders.insert(id);
  }
  out.included.assign(reporters.begin(), reporters.end());
  if (alive.size() < min_reporters || reporters.size() < min_reporters) {
    out.reason = sa::AbortReason::kTooFewSurvivors;
    return out;
  }
  for (uint32_t id : alive) {
    const auto& peers = mask_set[id];
    const bool reported = reporters.count(id) != 0;
    const auto count_in = [&](const std::set<uint32_t>& s) {
      return std::count_if(peers.begin(), peers.end(), [&](uint32_t p) { return s.count(p) != 0; });
    };
    if (!reported && count_in(reporters) == 0) continue;  // nobody masked with it: nothing to remove
    if (count_in(holders) < static_cast<long>(threshold)) {
      out.reason = sa::AbortReason::kUnmaskFailed;
      return out;
    }
  }
  out.done = true;
  return out;
}

// ---- 1. the sum survives dropouts at every step ------------------------------

struct Scenario {
  const char* graph;
  uint32_t peers;  // 0: full
  DropAt at;
  uint32_t dropping;
};

TEST(AggregationServiceTest, SumIsThePlaintextSumWithDropoutsAtEachStep) {
  constexpr uint32_t kN = 40, kL = 64;
  const uint32_t sparse = 2 * static_cast<uint32_t>(std::ceil(std::log2(double{kN})));  // 12
  const std::vector<uint32_t> ids = Ids(kN);
  std::vector<Scenario> scenarios;
  for (uint32_t peers : {sparse, 0u}) {
    scenarios.push_back({peers == 0 ? "full" : "sparse", peers, DropAt::kNever, 0});
    for (DropAt at : {DropAt::kBeforeKey, DropAt::kBeforeUpload, DropAt::kBeforeReveal}) {
      for (uint32_t dropping : {kN / 10, kN * 3 / 10})
        scenarios.push_back({peers == 0 ? "full" : "sparse", peers, at, dropping});
    }
  }
  std::mt19937_64 rng(21);
  int index = 0;
  for (const Scenario& s : scenarios) {
    SCOPED_TRACE(std::string(s.graph) + " graph, " + std::to_string(s.dropping) + " dropping at step " +
                 std::to_string(static_cast<int>(s.at)));
    AggregationService service(/*round_salt=*/7);
    Harness h(service, ids, kL, 100 + index);
    AggregationRequest request;
    request.devices = ids;
    request.length = kL;
    request.peers = s.peers;
    request.step_timeout_us = kTimeout;
    request.graph_seed = 5 + index;
    request.memory = index % 2 == 0 ? UploadMemory::kRunningSum : UploadMemory::kKeepVectors;
    ++index;
    const uint32_t id = service.Add(request, h.now);
    ASSERT_EQ(id, 1u) << service.last_refusal();
    const AggregationResult& r = service.result(id);
    // Who drops: drawn at random. Bell et al. size k for the dropout rate;
    // with k = 12 and t = 7 a 30 % dropout after step 1 strands a secret in
    // most draws, so those draw again until the graph survives them (the
    // other outcome is the UnmaskFailed test). Every other draw must survive
    // as drawn.
    std::map<uint32_t, DropAt> drops;
    Prediction want;
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 2000);
      std::vector<uint32_t> order = ids;
      std::shuffle(order.begin(), order.end(), rng);
      drops.clear();
      for (uint32_t k = 0; k < s.dropping; ++k) drops[order[k]] = s.at;
      want = Predict(service, id, ids, drops, r.threshold, r.min_reporters);
      if (want.done) break;
      ASSERT_TRUE(s.peers != 0 && s.dropping == kN * 3 / 10 && s.at != DropAt::kBeforeKey)
          << "a draw that should always survive did not";
    }
    int k = 0;
    for (const auto& [device, at] : drops) {
      h.device(device).drop = at;
      h.device(device).unreachable_when_dropping = k++ % 2 == 0;  // half noticed, half silent until the deadline
    }
    h.RunToEnd(id);
    ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
    EXPECT_EQ(r.included, want.included);
    EXPECT_EQ(r.excluded, want.excluded);
    EXPECT_EQ(r.sum, CodeSum(h, r.included, kL));
    ExpectDecodesToInputSum(h, r);
    // Who dropped where, as the service saw it.
    std::vector<uint32_t> expect_keys, expect_uploads, expect_reveals;
    for (const auto& [device, at] : drops) {
      (at == DropAt::kBeforeKey      ? expect_keys
       : at == DropAt::kBeforeUpload ? expect_uploads
                                     : expect_reveals)
          .push_back(device);
    }
    EXPECT_EQ(r.dropped_at_keys, expect_keys);
    EXPECT_EQ(r.dropped_at_uploads, expect_uploads);
    EXPECT_EQ(r.dropped_at_reveals, expect_reveals);
    EXPECT_EQ(r.included.size() + r.excluded.size() + r.dropped_at_keys.size() + r.dropped_at_uploads.size(), kN);
    // Every reporter, and only they, was asked to reveal.
    EXPECT_EQ(h.CountSent(sa::kAggReveal), r.included.size());
    // Settled when the harness was at h.now; a silent dropper (every other
    // one) held its step until the deadline, the unreachable ones did not.
    EXPECT_EQ(r.wall_us, h.now);
    EXPECT_EQ(r.wall_us, s.dropping >= 2 ? kTimeout : 0u);
    EXPECT_GT(r.traffic.at(ids[0]).bytes_sent, 0u);
    // One secret rebuilt per device dropped at step 2, plus one pair seed
    // per reporting peer of it.
    if (r.dropped_at_uploads.empty()) {
      EXPECT_EQ(r.scalar_multiplications, 0u);
    } else {
      EXPECT_GT(r.scalar_multiplications, r.dropped_at_uploads.size());
    }
  }
}

// ---- 2. too few reporters: abort before anything is revealed ---------------

TEST(AggregationServiceTest, TooFewReportersAbortsBeforeAnyReveal) {
  constexpr uint32_t kN = 12, kL = 16;
  const std::vector<uint32_t> ids = Ids(kN);
  AggregationService service(1);
  Harness h(service, ids, kL, 2);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.min_reporters = 10;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  ASSERT_NE(id, 0u);
  for (uint32_t k : {0u, 4u, 8u}) h.device(ids[k]).drop = DropAt::kBeforeUpload;  // 9 report
  h.RunToEnd(id);
  const AggregationResult& r = service.result(id);
  EXPECT_EQ(r.state, AggregationState::kAborted);
  EXPECT_EQ(r.abort_reason, sa::AbortReason::kTooFewSurvivors);
  EXPECT_TRUE(r.sum.empty());
  EXPECT_TRUE(r.included.empty());
  EXPECT_EQ(h.CountSent(sa::kAggReveal), 0u);  // no share of anything was asked for
  EXPECT_EQ(r.dropped_at_uploads, (std::vector<uint32_t>{ids[0], ids[4], ids[8]}));
  const auto aborts = h.AbortsSent();
  for (uint32_t k = 0; k < kN; ++k) {
    const bool dropped = k % 4 == 0 && k <= 8;
    ASSERT_EQ(aborts.count(ids[k]), 1u) << k;
    EXPECT_EQ(aborts.at(ids[k]), static_cast<int>(dropped ? sa::AbortReason::kLate : sa::AbortReason::kTooFewSurvivors))
        << k;
  }
  // With min_reporters 9 the same fleet goes through.
  AggregationService again(1);
  Harness h2(again, ids, kL, 2);
  request.min_reporters = 9;
  const uint32_t id2 = again.Add(request, h2.now);
  for (uint32_t k : {0u, 4u, 8u}) h2.device(ids[k]).drop = DropAt::kBeforeUpload;
  h2.RunToEnd(id2);
  EXPECT_EQ(again.result(id2).state, AggregationState::kDone) << again.result(id2).message;
  EXPECT_GT(h2.CountSent(sa::kAggReveal), 0u);
}

// Too few devices left after step 1 aborts before the uploads.
TEST(AggregationServiceTest, TooFewKeysAbortsBeforeTheUploads) {
  const std::vector<uint32_t> ids = Ids(6);
  AggregationService service(1);
  Harness h(service, ids, 8, 3);
  AggregationRequest request;
  request.devices = ids;
  request.length = 8;
  request.threshold = 2;
  request.min_reporters = 5;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  h.device(ids[1]).drop = DropAt::kBeforeKey;
  h.device(ids[2]).drop = DropAt::kBeforeKey;
  h.RunToEnd(id);
  const AggregationResult& r = service.result(id);
  EXPECT_EQ(r.abort_reason, sa::AbortReason::kTooFewSurvivors);
  EXPECT_EQ(h.CountSent(sa::kAggMaskSet), 0u);
  EXPECT_EQ(r.dropped_at_keys, (std::vector<uint32_t>{ids[1], ids[2]}));
}

// ---- 3. a secret that cannot be rebuilt aborts the unmasking ---------------

TEST(AggregationServiceTest, TooManyRevealDropoutsAbortWithUnmaskFailed) {
  constexpr uint32_t kN = 20, kL = 16;
  const std::vector<uint32_t> ids = Ids(kN);
  AggregationService service(4);
  Harness h(service, ids, kL, 4);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.peers = 8;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  ASSERT_NE(id, 0u);
  const AggregationResult& r = service.result(id);
  EXPECT_EQ(r.threshold, 5u);  // a strict majority of 8
  // Device ids[0] reports, but all of its peers except threshold - 1 stay
  // silent at step 3: its self seed keeps 4 holders of the 5 needed.
  const std::vector<uint32_t> peers = service.PeersOf(id, ids[0]);
  ASSERT_GE(peers.size(), 8u);
  std::map<uint32_t, DropAt> drops;
  for (size_t k = r.threshold - 1; k < peers.size(); ++k) drops[peers[k]] = DropAt::kBeforeReveal;
  for (const auto& [device, at] : drops) h.device(device).drop = at;
  const Prediction want = Predict(service, id, ids, drops, r.threshold, r.min_reporters);
  EXPECT_EQ(want.reason, sa::AbortReason::kUnmaskFailed);
  h.RunToEnd(id);
  EXPECT_EQ(r.state, AggregationState::kAborted);
  EXPECT_EQ(r.abort_reason, sa::AbortReason::kUnmaskFailed);
  EXPECT_TRUE(r.sum.empty());
  EXPECT_FALSE(r.message.empty());
  EXPECT_EQ(r.dropped_at_reveals.size(), drops.size());
  // Every device still in it (all of them: nobody was unreachable) is told.
  const auto aborts = h.AbortsSent();
  for (uint32_t device : ids) {
    ASSERT_EQ(aborts.count(device), 1u) << device;
    EXPECT_EQ(aborts.at(device), static_cast<int>(sa::AbortReason::kUnmaskFailed));
  }
}

// ---- 4. paper mode: everyone or nothing --------------------------------------

TEST(AggregationServiceTest, PaperModeSumsWhenAllReportAndAbortsOnAnyDropout) {
  constexpr uint32_t kN = 10, kL = 32;
  const std::vector<uint32_t> ids = Ids(kN);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.mode = sa::AggMode::kPaper;
  request.step_timeout_us = kTimeout;
  {
    AggregationService service(5);
    Harness h(service, ids, kL, 5);
    const uint32_t id = service.Add(request, h.now);
    h.RunToEnd(id);
    const AggregationResult& r = service.result(id);
    ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
    EXPECT_EQ(r.threshold, 0u);
    EXPECT_EQ(r.included, ids);
    EXPECT_EQ(r.sum, CodeSum(h, ids, kL));
    ExpectDecodesToInputSum(h, r);
    EXPECT_EQ(h.CountSent(sa::kAggReveal), 0u);  // no step 3
  }
  for (DropAt at : {DropAt::kBeforeKey, DropAt::kBeforeUpload}) {
    AggregationService service(5);
    Harness h(service, ids, kL, 5);
    const uint32_t id = service.Add(request, h.now);
    h.device(ids[3]).drop = at;
    h.RunToEnd(id);
    const AggregationResult& r = service.result(id);
    EXPECT_EQ(r.state, AggregationState::kAborted);
    EXPECT_EQ(r.abort_reason, sa::AbortReason::kTooFewSurvivors);
    EXPECT_NE(r.message.find("paper mode"), std::string::npos) << r.message;
    if (at == DropAt::kBeforeKey) {
      // Which device, and that it went silent rather than refused.
      EXPECT_NE(r.message.find("device " + std::to_string(ids[3]) + " did not finish step 1 by its deadline"),
                std::string::npos)
          << r.message;
    }
    EXPECT_TRUE(r.sum.empty());
    EXPECT_EQ(h.CountSent(sa::kAggReveal), 0u);
    EXPECT_EQ(h.CountSent(sa::kAggMaskSet), at == DropAt::kBeforeKey ? 0u : kN);
  }
}

// ---- 5. the server's view does not depend on one device's input ------------

// Chi-square statistic of the low bytes of `words` against the uniform
// distribution (255 degrees of freedom).
double LowByteChiSquare(const std::vector<uint32_t>& words) {
  std::vector<double> counts(256, 0);
  for (uint32_t w : words) counts[w & 0xFF] += 1;
  const double expected = static_cast<double>(words.size()) / 256;
  double chi2 = 0;
  for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
  return chi2;
}

// What this shows, and what it does not. Two runs of one aggregation with
// every device's randomness the same (keys, self seeds, share polynomials)
// and the same graph; only device 0's input changes, and device 1's changes
// by the opposite amount so that the sum is the same. Then:
//   - every record the server receives, other than the masked vectors of
//     devices 0 and 1, is byte-identical across the runs, and so is every
//     record the server sends: keys and shares do not depend on inputs;
//   - device 0's masked vector, for two very different inputs, passes a
//     uniformity test on its low bytes (chi-square, 255 dof, 377 is the
//     10^-6 point), while the raw inputs fail it (the test can fail).
// Together: what the server sees of device 0 is its masked vector, which
// looks uniform whatever the input, and everything else it sees is the same
// for any input with the same sum. It is a statistical check of one
// property (masking hides the input), not a proof of security; that the
// masks are pseudorandom is AES-CTR's business.
TEST(AggregationServiceTest, TheServersViewDoesNotDependOnOneDevicesInput) {
  constexpr uint32_t kN = 4, kL = 1u << 16;
  const std::vector<uint32_t> ids = Ids(kN);
  std::vector<uint32_t> zeros(kL, 0), small(kL), rest(kL);
  for (uint32_t i = 0; i < kL; ++i) small[i] = i % 3;  // a structured input
  for (uint32_t i = 0; i < kL; ++i) rest[i] = 1000 + i;
  auto run = [&](const std::vector<uint32_t>& input0, std::vector<DeviceRecord>& received, std::vector<AggRecord>& sent,
                 std::vector<uint32_t>& masked0, std::vector<uint32_t>& sum) {
    AggregationService service(9);
    Harness h(service, ids, kL, 77);
    // Device 0 holds input0, device 1 holds rest - input0: the sum is fixed.
    std::vector<uint32_t> input1(kL);
    for (uint32_t i = 0; i < kL; ++i) input1[i] = rest[i] - input0[i];
    h.SetCodes(h.device(ids[0]), input0);
    h.SetCodes(h.device(ids[1]), input1);
    AggregationRequest request;
    request.devices = ids;
    request.length = kL;
    request.step_timeout_us = kTimeout;
    const uint32_t id = service.Add(request, h.now);
    h.RunToEnd(id);
    ASSERT_EQ(service.result(id).state, AggregationState::kDone) << service.result(id).message;
    received = h.to_server;
    sent = h.to_devices;
    masked0 = h.device(ids[0]).masked;
    sum = service.result(id).sum;
  };
  std::vector<DeviceRecord> received_a, received_b;
  std::vector<AggRecord> sent_a, sent_b;
  std::vector<uint32_t> masked_a, masked_b, sum_a, sum_b;
  run(zeros, received_a, sent_a, masked_a, sum_a);
  run(small, received_b, sent_b, masked_b, sum_b);
  EXPECT_EQ(sum_a, sum_b);
  ASSERT_EQ(received_a.size(), received_b.size());
  size_t differing = 0;
  for (size_t k = 0; k < received_a.size(); ++k) {
    const DeviceRecord& a = received_a[k];
    const DeviceRecord& b = received_b[k];
    ASSERT_EQ(a.device, b.device);
    ASSERT_EQ(a.kind, b.kind);
    if (a.bytes == b.bytes) continue;
    ++differing;
    EXPECT_EQ(a.kind, sa::kAggMasked) << "record " << k << " of device " << a.device << " depends on the input";
    EXPECT_TRUE(a.device == ids[0] || a.device == ids[1]) << "device " << a.device;
  }
  EXPECT_GT(differing, 0u);  // the masked vectors of 0 and 1 did change
  ASSERT_EQ(sent_a.size(), sent_b.size());
  for (size_t k = 0; k < sent_a.size(); ++k) {
    EXPECT_EQ(sent_a[k].device, sent_b[k].device);
    EXPECT_EQ(sent_a[k].bytes, sent_b[k].bytes) << "the server's record " << k << " depends on an input";
  }
  constexpr double kChi2At1e6 = 377;  // 255 dof
  EXPECT_LT(LowByteChiSquare(masked_a), kChi2At1e6);
  EXPECT_LT(LowByteChiSquare(masked_b), kChi2At1e6);
  EXPECT_GT(LowByteChiSquare(zeros), kChi2At1e6);  // the statistic sees structure
  EXPECT_GT(LowByteChiSquare(small), kChi2At1e6);
}

// ---- 6. refused, malformed and replayed records ------------------------------

std::vector<uint8_t> Truncated(std::vector<uint8_t> bytes, size_t keep) {
  bytes.resize(keep);
  return bytes;
}

std::vector<uint8_t> SharesRecord(uint32_t aggregation, const std::vector<sa::RevealedShare>& entries) {
  std::vector<uint8_t> record(sa::kAggSharesHeaderBytes + entries.size() * sa::kRevealedShareBytes);
  size_t at = sa::EncodeAggSharesHeader(aggregation, static_cast<uint16_t>(entries.size()), record.data());
  for (const auto& e : entries) at += sa::EncodeRevealedShare(e, record.data() + at);
  return record;
}

sa::RevealedShare FirstShareOf(const std::vector<uint8_t>& record) {
  auto view = sa::DecodeAggShares(ConstByteSpan(record.data(), record.size()));
  EXPECT_TRUE(view.ok());
  auto entry = sa::RevealedShareAt(*view, 0);
  EXPECT_TRUE(entry.ok());
  return *entry;
}

// Records that break the contract are refused and counted, and change
// nothing: the round ends with every device included and the same sum as a
// clean run.
TEST(AggregationServiceTest, RefusedAndReplayedRecordsChangeNothing) {
  constexpr uint32_t kN = 10, kL = 2500;  // 3 runs per vector
  const std::vector<uint32_t> ids = Ids(kN);
  const uint32_t key_sender = ids[2], uploader = ids[3], revealer = ids[4];
  AggregationService service(6);
  Harness h(service, ids, kL, 6);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.peers = 4;  // sparse: some devices are not revealer's peers
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  ASSERT_EQ(id, 1u);
  uint64_t refused = 0;
  auto refuse = [&](uint32_t device, uint32_t kind, std::vector<uint8_t> bytes, const char* what) {
    EXPECT_EQ(h.Inject(device, kind, std::move(bytes)), Outcome::kRejected) << what;
    ++refused;
  };
  bool keys_done = false, runs_done = false, replay_done = false, shares_done = false;
  std::vector<uint8_t> first_run;
  h.after_record = [&](const DeviceRecord& r) {
    ASSERT_EQ(r.outcome, Outcome::kAccepted) << "device " << r.device << " kind " << r.kind;
    if (r.kind == sa::kAggKey && r.device == key_sender && !keys_done) {
      keys_done = true;
      refuse(key_sender, sa::kAggKey, r.bytes, "a replayed key");
      std::vector<uint8_t> other = r.bytes;
      other[10] ^= 1;
      refuse(key_sender, sa::kAggKey, other, "a second, different key");
      EXPECT_EQ(h.Inject(999, sa::kAggKey, r.bytes), Outcome::kRejected);  // not a participant: not charged
      refuse(key_sender, sa::kAggMasked, std::vector<uint8_t>(r.bytes.begin(), r.bytes.begin() + 12),
             "an upload before the mask set");
      refuse(key_sender, sa::kAggShares, SharesRecord(id, {sa::RevealedShare{ids[0], sa::RevealCode::kSelfSeed, {}}}),
             "shares before any reveal");
    }
    if (r.kind == sa::kAggMasked && r.device == uploader && !runs_done) {
      runs_done = true;  // its first run, words 0 .. 999
      first_run = r.bytes;
      refuse(uploader, sa::kAggMasked, r.bytes, "a replayed run");
      std::vector<uint8_t> overlapping = r.bytes;
      StoreU32Le(500, overlapping.data() + 4);
      refuse(uploader, sa::kAggMasked, overlapping, "a run overlapping words received");
      std::vector<uint8_t> beyond = r.bytes;
      StoreU32Le(kL - 10, beyond.data() + 4);
      refuse(uploader, sa::kAggMasked, beyond, "a run past the end");
      std::vector<uint8_t> other_aggregation = r.bytes;
      StoreU32Le(id + 1, other_aggregation.data());
      EXPECT_EQ(h.Inject(uploader, sa::kAggMasked, other_aggregation), Outcome::kRejected);      // no such aggregation
      EXPECT_EQ(h.Inject(uploader, sa::kAggMasked, Truncated(r.bytes, 3)), Outcome::kRejected);  // names none
      EXPECT_EQ(h.Inject(uploader, sa::kAggStart, r.bytes), Outcome::kRejected);                 // not a device's kind
      refuse(ids[9], sa::kAggKey, h.to_server.front().bytes, "another device's key, replayed");
    }
    if (r.kind == sa::kAggMasked && r.device == uploader && r.bytes.size() < 8 + 4 * sa::kAggWordsPerRecord &&
        !replay_done) {
      replay_done = true;  // its last run: the vector is complete
      refuse(uploader, sa::kAggMasked, r.bytes, "a replayed last run");
      refuse(uploader, sa::kAggMasked, first_run, "the first run again, after the vector was complete");
    }
    if (r.kind == sa::kAggShares && r.device == revealer && !shares_done) {
      shares_done = true;
      refuse(revealer, sa::kAggShares, r.bytes, "replayed shares");
      sa::RevealedShare e = FirstShareOf(r.bytes);
      sa::RevealedShare other_kind = e;
      other_kind.code = e.code == sa::RevealCode::kSelfSeed ? sa::RevealCode::kRoundSecret : sa::RevealCode::kSelfSeed;
      refuse(revealer, sa::kAggShares, SharesRecord(id, {other_kind}), "the other secret of the same peer");
      const std::vector<uint32_t> peers = service.PeersOf(id, revealer);
      uint32_t stranger = 0;
      for (uint32_t d : ids) {
        if (d != revealer && !std::binary_search(peers.begin(), peers.end(), d)) stranger = d;
      }
      ASSERT_NE(stranger, 0u);
      refuse(revealer, sa::kAggShares, SharesRecord(id, {sa::RevealedShare{stranger, sa::RevealCode::kSelfSeed, {}}}),
             "a share of a device that is not its peer");
      refuse(revealer, sa::kAggShares, SharesRecord(id, {sa::RevealedShare{revealer, sa::RevealCode::kSelfSeed, {}}}),
             "a share of itself");
      refuse(revealer, sa::kAggKey, h.to_server.front().bytes, "a key in step 3");
      // A device that has not answered yet (its answer comes later and must
      // still be accepted): the kind it was not asked for, and one peer twice.
      const uint32_t later = ids[8];
      const uint32_t its_peer = service.PeersOf(id, later).front();
      refuse(later, sa::kAggShares, SharesRecord(id, {sa::RevealedShare{its_peer, sa::RevealCode::kRoundSecret, {}}}),
             "the round secret of a peer that reported");
      const sa::RevealedShare twice{its_peer, sa::RevealCode::kSelfSeed, {}};
      refuse(later, sa::kAggShares, SharesRecord(id, {twice, twice}), "one peer twice in a record");
    }
  };
  h.RunToEnd(id);
  EXPECT_TRUE(keys_done && runs_done && replay_done && shares_done);
  const AggregationResult& r = service.result(id);
  ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
  EXPECT_EQ(r.included, ids);
  EXPECT_EQ(r.sum, CodeSum(h, ids, kL));
  EXPECT_EQ(r.rejected_records, refused);
  EXPECT_EQ(service.totals().records_rejected, refused + 4);  // and the 4 no aggregation could claim
  EXPECT_EQ(r.late_records, 0u);
}

// A record that does not decode drops its sender from that point (its
// later records are refused); the others' sum goes on without it.
TEST(AggregationServiceTest, MalformedRecordsDropTheirSender) {
  constexpr uint32_t kN = 10, kL = 2500;
  const std::vector<uint32_t> ids = Ids(kN);
  const uint32_t bad_key = ids[1], bad_upload = ids[5], bad_shares = ids[7];
  AggregationService service(8);
  Harness h(service, ids, kL, 8);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  bool upload_done = false, shares_done = false;
  h.after_record = [&](const DeviceRecord& r) {
    if (r.kind == sa::kAggKey && r.device == bad_key) {
      EXPECT_EQ(r.outcome, Outcome::kAccepted);
      EXPECT_EQ(h.Inject(bad_key, sa::kAggKey, Truncated(r.bytes, r.bytes.size() - 1)), Outcome::kRejected);
    }
    if (r.kind == sa::kAggMasked && r.device == bad_upload && !upload_done) {
      upload_done = true;
      EXPECT_EQ(r.outcome, Outcome::kAccepted);
      EXPECT_EQ(h.Inject(bad_upload, sa::kAggMasked, Truncated(r.bytes, 10)), Outcome::kRejected);
    }
    if (r.kind == sa::kAggShares && r.device == bad_shares && !shares_done) {
      shares_done = true;
      EXPECT_EQ(r.outcome, Outcome::kAccepted);
      std::vector<uint8_t> unknown_code = r.bytes;
      unknown_code[sa::kAggSharesHeaderBytes + 4] = 3;  // no such RevealCode
      EXPECT_EQ(h.Inject(bad_shares, sa::kAggShares, unknown_code), Outcome::kRejected);
    }
  };
  h.RunToEnd(id);
  const AggregationResult& r = service.result(id);
  ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
  EXPECT_EQ(r.dropped_at_keys, std::vector<uint32_t>{bad_key});
  EXPECT_EQ(r.dropped_at_uploads, std::vector<uint32_t>{bad_upload});
  EXPECT_EQ(r.dropped_at_reveals, std::vector<uint32_t>{bad_shares});  // still included: its vector is complete
  std::vector<uint32_t> expected;
  for (uint32_t d : ids) {
    if (d != bad_key && d != bad_upload) expected.push_back(d);
  }
  EXPECT_EQ(r.included, expected);
  EXPECT_EQ(r.sum, CodeSum(h, expected, kL));
  // The rest of bad_upload's runs were refused, not counted in.
  size_t refused_runs = 0;
  for (const DeviceRecord& rec : h.to_server) {
    if (rec.device == bad_upload && rec.kind == sa::kAggMasked && rec.outcome == Outcome::kRejected) ++refused_runs;
  }
  EXPECT_EQ(refused_runs, 2u);
  const auto aborts = h.AbortsSent();
  EXPECT_EQ(aborts.at(bad_key), static_cast<int>(sa::AbortReason::kExcluded));
  EXPECT_EQ(aborts.at(bad_upload), static_cast<int>(sa::AbortReason::kExcluded));
}

// ---- 7. deadlines -----------------------------------------------------------

TEST(AggregationServiceTest, DeadlinesDropSilentDevicesAndLateUploadsAreRefused) {
  constexpr uint32_t kN = 8, kL = 16;
  const std::vector<uint32_t> ids = Ids(kN);
  const uint32_t silent = ids[2], slow = ids[6];
  AggregationService service(10);
  Harness h(service, ids, kL, 10);
  AggregationRequest request;
  request.devices = ids;
  request.length = kL;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  const AggregationResult& r = service.result(id);
  h.device(silent).drop = DropAt::kBeforeKey;
  h.device(slow).hold_upload = true;
  h.Pump();
  // Step 1 waits for the silent device until its deadline, not a µs less.
  service.Poll(kTimeout - 1);
  EXPECT_EQ(r.step, AggregationStep::kKeys);
  EXPECT_TRUE(r.dropped_at_keys.empty());
  h.now = kTimeout;
  service.Poll(h.now);
  EXPECT_EQ(r.step, AggregationStep::kUploads);
  EXPECT_EQ(r.dropped_at_keys, std::vector<uint32_t>{silent});
  h.Pump();
  EXPECT_EQ(h.AbortsSent().at(silent), static_cast<int>(sa::AbortReason::kExcluded));
  // Its key, now, is late.
  sa::AggKey key;
  key.aggregation = id;
  key.public_key[0] = 4;
  const auto silent_peers = static_cast<uint32_t>(h.device(silent).peers.size());
  std::vector<uint8_t> encoded(sa::AggKeyBytes(silent_peers));
  ASSERT_TRUE(sa::EncodeAggKey(key, silent_peers, ByteSpan(encoded.data(), encoded.size())).ok());
  EXPECT_EQ(h.Inject(silent, sa::kAggKey, encoded), Outcome::kLate);
  // Everyone but the slow device uploaded; the step waits for it.
  ASSERT_FALSE(h.device(slow).held.empty());
  EXPECT_EQ(r.step, AggregationStep::kUploads);
  // Its upload arrives after the deadline: the record closes the step first,
  // then is late, and the device is told so (once).
  h.now = 2 * kTimeout;
  EXPECT_EQ(h.Inject(slow, sa::kAggMasked, h.device(slow).held[0]), Outcome::kLate);
  EXPECT_EQ(r.step, AggregationStep::kReveals);
  EXPECT_EQ(r.dropped_at_uploads, std::vector<uint32_t>{slow});
  EXPECT_EQ(h.Inject(slow, sa::kAggMasked, h.device(slow).held[0]), Outcome::kLate);
  h.RunToEnd(id);
  const auto aborts = h.AbortsSent();  // fails on a second abort to one device
  EXPECT_EQ(aborts.at(slow), static_cast<int>(sa::AbortReason::kLate));
  ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
  std::vector<uint32_t> expected;
  for (uint32_t d : ids) {
    if (d != silent && d != slow) expected.push_back(d);
  }
  EXPECT_EQ(r.included, expected);
  EXPECT_EQ(r.sum, CodeSum(h, expected, kL));
  EXPECT_EQ(r.late_records, 3u);
  EXPECT_EQ(r.wall_us, h.now);
  // After the end, an upload is still late.
  EXPECT_EQ(h.Inject(slow, sa::kAggMasked, h.device(slow).held[0]), Outcome::kLate);
}

// A device that goes away lets a step end early; no deadline needed.
TEST(AggregationServiceTest, UnreachableDevicesEndAStepEarly) {
  const std::vector<uint32_t> ids = Ids(6);
  AggregationService service(11);
  Harness h(service, ids, 8, 11);
  AggregationRequest request;
  request.devices = ids;
  request.length = 8;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  h.device(ids[0]).drop = DropAt::kBeforeUpload;
  h.device(ids[0]).unreachable_when_dropping = true;
  h.device(ids[5]).drop = DropAt::kBeforeReveal;
  h.device(ids[5]).unreachable_when_dropping = true;
  h.Pump();  // never past a deadline
  const AggregationResult& r = service.result(id);
  ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
  EXPECT_EQ(r.wall_us, 0u);
  EXPECT_EQ(r.dropped_at_uploads, std::vector<uint32_t>{ids[0]});
  EXPECT_EQ(r.dropped_at_reveals, std::vector<uint32_t>{ids[5]});
  const std::vector<uint32_t> expected(ids.begin() + 1, ids.end());
  EXPECT_EQ(r.included, expected);
  EXPECT_EQ(r.sum, CodeSum(h, expected, 8));
  EXPECT_EQ(h.AbortsSent().count(ids[0]), 0u);  // nothing is sent to an unreachable device
}

// A device that could not key a peer skips it in step 1 (at scale: the
// peer announced its job key after the server stopped waiting for it), and
// its key record says so. The pair is left out of both mask sets: the peer
// that did send must not wait for a message that never comes (before the
// key records carried the bitmap it waited until the step deadline and was
// dropped, and at 10,000 devices whole rounds aborted this way), nor be
// asked for shares it never received.
TEST(AggregationServiceTest, APairThatDidNotExchangeMessagesBothWaysIsLeftOutOfBothMaskSets) {
  const std::vector<uint32_t> ids = Ids(10);
  for (DropAt at : {DropAt::kNever, DropAt::kBeforeUpload, DropAt::kBeforeReveal}) {
    AggregationService service(13);
    Harness h(service, ids, 16, 13);
    AggregationRequest request;
    request.devices = ids;
    request.length = 16;
    request.step_timeout_us = kTimeout;  // full graph, threshold 5 of 9
    const uint32_t id = service.Add(request, h.now);
    const uint32_t a = ids[2], b = ids[5];
    h.device(a).skip = {b};  // b's message reaches a; a's never reaches b
    h.device(b).drop = at;
    h.device(b).unreachable_when_dropping = true;  // so that no step waits for b itself
    h.Pump();  // never past a deadline: nobody waits for a missing message
    const AggregationResult& r = service.result(id);
    ASSERT_EQ(r.state, AggregationState::kDone) << r.message << " step " << static_cast<int>(r.step) << " at " << static_cast<int>(at);
    EXPECT_EQ(r.wall_us, 0u);
    EXPECT_TRUE(r.dropped_at_keys.empty());
    EXPECT_TRUE(r.excluded.empty());
    const auto has = [](const std::vector<uint32_t>& v, uint32_t x) { return std::count(v.begin(), v.end(), x) != 0; };
    EXPECT_FALSE(has(h.device(a).mask_set, b));
    EXPECT_FALSE(has(h.device(b).mask_set, a));
    EXPECT_EQ(h.device(a).mask_set.size(), 8u);
    // Everyone else masks with both.
    EXPECT_TRUE(has(h.device(ids[0]).mask_set, a));
    EXPECT_TRUE(has(h.device(ids[0]).mask_set, b));
    std::vector<uint32_t> expected = ids;
    if (at == DropAt::kBeforeUpload) {
      expected.erase(std::find(expected.begin(), expected.end(), b));
      EXPECT_EQ(r.dropped_at_uploads, std::vector<uint32_t>{b});
      // Its round secret is rebuilt from the others' shares, not a's.
      EXPECT_EQ(h.device(a).revealed_secret.count(b), 0u);
    }
    EXPECT_EQ(r.included, expected);
    EXPECT_EQ(r.sum, CodeSum(h, expected, 16));
    ExpectDecodesToInputSum(h, r);
  }
}

// A key record whose bitmap does not match its count, or sets a padding
// bit, is malformed.
TEST(AggregationServiceTest, AKeyRecordWithABadReachedBitmapIsMalformed) {
  sa::AggKey key;
  key.aggregation = 1;
  key.public_key[0] = 4;
  key.shared_with = 2;
  std::vector<uint8_t> record(sa::AggKeyBytes(9));
  ASSERT_TRUE(sa::EncodeAggKey(key, 9, ByteSpan(record.data(), record.size())).ok());
  EXPECT_FALSE(sa::DecodeAggKey(ConstByteSpan(record.data(), record.size()), 9).ok());  // 0 bits set, 2 claimed
  sa::SetAggKeyReached(ByteSpan(record.data(), record.size()), 0);
  sa::SetAggKeyReached(ByteSpan(record.data(), record.size()), 8);
  Result<sa::AggKey> ok = sa::DecodeAggKey(ConstByteSpan(record.data(), record.size()), 9);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->shared_with, 2u);
  EXPECT_FALSE(sa::DecodeAggKey(ConstByteSpan(record.data(), record.size()), 17).ok());  // wrong length
  sa::SetAggKeyReached(ByteSpan(record.data(), record.size()), 9);  // padding
  EXPECT_FALSE(sa::DecodeAggKey(ConstByteSpan(record.data(), record.size()), 9).ok());
  std::vector<uint8_t> short_record(sa::AggKeyBytes(9) - 1);
  EXPECT_FALSE(sa::EncodeAggKey(key, 9, ByteSpan(short_record.data(), short_record.size())).ok());
}

// A reporter that goes away after its upload, while others still upload:
// included (its vector is complete), not asked to reveal, its self seed
// rebuilt from its peers' shares.
TEST(AggregationServiceTest, AReporterGoneBeforeItsRevealIsStillIncluded) {
  const std::vector<uint32_t> ids = Ids(6);
  const uint32_t gone = ids[1];
  AggregationService service(14);
  Harness h(service, ids, 8, 14);
  AggregationRequest request;
  request.devices = ids;
  request.length = 8;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  h.after_record = [&](const DeviceRecord& r) {
    if (r.kind != sa::kAggMasked || r.device != gone) return;
    EXPECT_EQ(service.result(id).step, AggregationStep::kUploads);
    service.MarkUnreachable(gone, h.now);
    h.device(gone).gone = true;
  };
  h.Pump();
  const AggregationResult& r = service.result(id);
  ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
  EXPECT_EQ(r.included, ids);
  EXPECT_EQ(r.dropped_at_reveals, std::vector<uint32_t>{gone});
  EXPECT_TRUE(r.dropped_at_uploads.empty());
  EXPECT_EQ(r.sum, CodeSum(h, ids, 8));
  for (const AggRecord& rec : h.to_devices) EXPECT_FALSE(rec.kind == sa::kAggReveal && rec.device == gone);
  EXPECT_EQ(h.CountSent(sa::kAggReveal), ids.size() - 1);
}

// The shares of a device dropped for a malformed record are not used: 5
// devices on the full graph, threshold 3, one reporter silent at step 3:
// the self seeds of the others keep exactly 3 holders and the round ends;
// when one holder's record is also malformed after it answered, they keep 2
// trusted holders and the unmasking must fail.
TEST(AggregationServiceTest, TheSharesOfAMalformedSenderAreNotUsed) {
  const std::vector<uint32_t> ids = Ids(5);
  const uint32_t bad = ids[0], silent = ids[4];
  for (bool malformed : {false, true}) {
    AggregationService service(15);
    Harness h(service, ids, 8, 15);
    AggregationRequest request;
    request.devices = ids;
    request.length = 8;
    request.threshold = 3;
    request.step_timeout_us = kTimeout;
    const uint32_t id = service.Add(request, h.now);
    h.device(silent).drop = DropAt::kBeforeReveal;
    h.after_record = [&](const DeviceRecord& r) {
      if (!malformed || r.kind != sa::kAggShares || r.device != bad) return;
      EXPECT_EQ(h.Inject(bad, sa::kAggShares, Truncated(r.bytes, r.bytes.size() - 1)), Outcome::kRejected);
    };
    h.RunToEnd(id);
    const AggregationResult& r = service.result(id);
    if (!malformed) {
      EXPECT_EQ(r.state, AggregationState::kDone) << r.message;
      EXPECT_EQ(r.sum, CodeSum(h, ids, 8));
    } else {
      EXPECT_EQ(r.state, AggregationState::kAborted);
      EXPECT_EQ(r.abort_reason, sa::AbortReason::kUnmaskFailed);
      EXPECT_EQ(r.dropped_at_reveals, (std::vector<uint32_t>{bad, silent}));
    }
  }
}

// ---- the rest of the API -------------------------------------------------------

TEST(AggregationServiceTest, BothUploadMemoriesGiveTheSameSum) {
  const std::vector<uint32_t> ids = Ids(12);
  std::vector<uint32_t> sums[2];
  for (UploadMemory memory : {UploadMemory::kRunningSum, UploadMemory::kKeepVectors}) {
    AggregationService service(12);
    Harness h(service, ids, 40, 12);
    AggregationRequest request;
    request.devices = ids;
    request.length = 40;
    request.peers = 6;
    request.memory = memory;
    request.step_timeout_us = kTimeout;
    const uint32_t id = service.Add(request, h.now);
    h.device(ids[4]).drop = DropAt::kBeforeUpload;
    h.RunToEnd(id);
    const AggregationResult& r = service.result(id);
    ASSERT_EQ(r.state, AggregationState::kDone) << r.message;
    EXPECT_EQ(r.sum, CodeSum(h, r.included, 40));
    sums[memory == UploadMemory::kKeepVectors ? 1 : 0] = r.sum;
  }
  EXPECT_EQ(sums[0], sums[1]);
}

TEST(AggregationServiceTest, CancelTellsEveryoneStillInIt) {
  const std::vector<uint32_t> ids = Ids(5);
  AggregationService service(13);
  Harness h(service, ids, 8, 13);
  AggregationRequest request;
  request.devices = ids;
  request.length = 8;
  request.step_timeout_us = kTimeout;
  const uint32_t id = service.Add(request, h.now);
  for (uint32_t d : ids) h.device(d).drop = DropAt::kBeforeUpload;
  h.device(ids[1]).unreachable_when_dropping = true;
  h.Pump();
  service.Cancel(id, 5);
  h.Pump();
  const AggregationResult& r = service.result(id);
  EXPECT_EQ(r.state, AggregationState::kAborted);
  EXPECT_EQ(r.abort_reason, sa::AbortReason::kCancelled);
  EXPECT_EQ(r.wall_us, 5u);
  const auto aborts = h.AbortsSent();
  EXPECT_EQ(aborts.size(), ids.size() - 1);
  EXPECT_EQ(aborts.count(ids[1]), 0u);
  EXPECT_EQ(service.totals().aborted, 1u);
  EXPECT_EQ(service.totals().running, 0u);
  service.Cancel(id, 6);  // no effect once settled
  EXPECT_EQ(service.totals().aborted, 1u);
}

TEST(AggregationServiceTest, RefusesBadRequestsAndSendsTheStartRecords) {
  AggregationService service(0x1234);
  AggregationRequest ok;
  ok.devices = {9, 4, 7, 1};
  ok.length = 10;
  auto refused = [&](AggregationRequest r, const char* what) {
    EXPECT_EQ(service.Add(r, 0), 0u) << what;
    EXPECT_FALSE(service.last_refusal().empty()) << what;
  };
  AggregationRequest r = ok;
  r.devices = {};
  refused(r, "no devices");
  r.devices = {5};
  refused(r, "one device");
  r.devices = {1, 2, 2};
  refused(r, "a duplicate");
  r = ok;
  r.length = 0;
  refused(r, "length 0");
  r.length = sa::kMaxAggLength + 1;
  refused(r, "length too large");
  r = ok;
  r.threshold = 4;
  refused(r, "threshold above the 3 peers");
  r = ok;
  r.min_reporters = 5;
  refused(r, "min_reporters above n");
  r = ok;
  r.step_timeout_us = 0;
  refused(r, "no time per step");
  EXPECT_TRUE(service.TakeRecords().empty());
  EXPECT_EQ(service.totals().refused_requests, 8u);
  // The first accepted request gets id 1.
  const uint32_t id = service.Add(ok, 0);
  ASSERT_EQ(id, 1u) << service.last_refusal();
  const AggregationResult& res = service.result(id);
  EXPECT_EQ(res.round, (uint64_t{0x1234} << 32) | 1);
  EXPECT_EQ(res.threshold, 2u);  // a strict majority of 3
  EXPECT_EQ(res.min_reporters, 2u);
  std::vector<AggRecord> records = service.TakeRecords();
  ASSERT_EQ(records.size(), 8u);  // start and one peers record per device
  const std::vector<uint32_t> sorted = {1, 4, 7, 9};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(records[2 * k].device, sorted[k]);
    ASSERT_EQ(records[2 * k].kind, sa::kAggStart);
    auto start = sa::DecodeAggStart(ConstByteSpan(records[2 * k].bytes.data(), records[2 * k].bytes.size()));
    ASSERT_TRUE(start.ok());
    EXPECT_EQ(start->aggregation, id);
    EXPECT_EQ(start->round, res.round);
    EXPECT_EQ(start->peer_count, 3u);
    EXPECT_EQ(start->threshold, 2u);
    ASSERT_EQ(records[2 * k + 1].kind, sa::kAggPeers);
    auto run = sa::DecodeAggRun(ConstByteSpan(records[2 * k + 1].bytes.data(), records[2 * k + 1].bytes.size()));
    ASSERT_TRUE(run.ok());
    std::vector<uint32_t> peers;
    for (uint32_t i = 0; i < run->count(); ++i) peers.push_back(run->at(i));
    std::vector<uint32_t> others;
    for (uint32_t d : sorted) {
      if (d != sorted[k]) others.push_back(d);
    }
    EXPECT_EQ(peers, others);  // the full graph, ascending
  }
  // The second gets id 2 and its own round.
  EXPECT_EQ(service.Add(ok, 0), 2u);
  EXPECT_EQ(service.result(2).round, (uint64_t{0x1234} << 32) | 2);
}

// The random graph: symmetric, at least `peers` each, a little more on
// average; a long peer list comes in several kAggPeers records.
TEST(AggregationServiceTest, TheRandomGraphIsSymmetricWithEnoughPeersAndLongListsAreSplit) {
  AggregationService service(3);
  AggregationRequest request;
  request.devices = Ids(1000);
  request.length = 1;
  request.peers = 20;
  const uint32_t id = service.Add(request, 0);
  ASSERT_NE(id, 0u);
  double total = 0;
  for (uint32_t d : request.devices) {
    const std::vector<uint32_t> peers = service.PeersOf(id, d);
    EXPECT_GE(peers.size(), 20u);
    EXPECT_TRUE(std::is_sorted(peers.begin(), peers.end()));
    total += static_cast<double>(peers.size());
    for (uint32_t p : peers) {
      const std::vector<uint32_t> back = service.PeersOf(id, p);
      ASSERT_TRUE(std::binary_search(back.begin(), back.end(), d)) << d << " - " << p;
    }
  }
  EXPECT_LT(total / 1000, 25.0);  // about k, not 2k
  EXPECT_EQ(service.result(id).threshold, 11u);
  service.TakeRecords();
  // The full graph of 1100: 1099 peers, more than one record holds.
  request.devices = Ids(1100);
  request.peers = 0;
  const uint32_t full = service.Add(request, 0);
  ASSERT_NE(full, 0u);
  std::vector<uint32_t> peers_of_first;
  for (const AggRecord& rec : service.TakeRecords()) {
    if (rec.device != request.devices[0] || rec.kind != sa::kAggPeers) continue;
    auto run = sa::DecodeAggRun(ConstByteSpan(rec.bytes.data(), rec.bytes.size()));
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->offset, peers_of_first.size());
    EXPECT_LE(run->count(), sa::kAggPeersPerRecord);
    EXPECT_LE(rec.bytes.size(), sa::kAggRecordBytes);
    for (uint32_t i = 0; i < run->count(); ++i) peers_of_first.push_back(run->at(i));
  }
  EXPECT_EQ(peers_of_first.size(), 1099u);
  EXPECT_EQ(peers_of_first, std::vector<uint32_t>(request.devices.begin() + 1, request.devices.end()));
}

}  // namespace
}  // namespace nodefl::server::secagg
