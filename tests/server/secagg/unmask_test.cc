// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's unmasking of one secure-aggregation round (server/secagg)
// against devices simulated with the SDK's arithmetic: a sparse mask graph
// (each device masks with 6 peers and shares its self seed and round secret
// 3-of-6 among them, Bell et al.'s shape), dropouts after masking at 0 %,
// 10 % and 30 %: the sum equals the reporters' plaintext sum whenever every
// needed secret has enough surviving holders, and the round aborts (nothing
// unmasked) otherwise; shares that do not open a dropped device's announced
// key, and vectors of the wrong length, abort it too.
#include "nodefl/server/secagg/unmask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/secagg/masks.h"

namespace nodefl::server::secagg {
namespace {
namespace sa = nodefl::secagg;

constexpr uint32_t kN = 30, kT = 3;
constexpr size_t kL = 128;
constexpr uint64_t kRound = 5;
const sa::FixedPoint kCode{2.0f, 4096.0f};

// Everything the devices hold and send, simulated.
struct Fleet {
  std::vector<std::vector<uint32_t>> peers;
  std::vector<std::unique_ptr<sa::RoundKeyPair>> keys;
  std::vector<sa::MaskSeed> self;
  std::vector<std::vector<float>> x;
  std::vector<std::vector<uint32_t>> masked;
  // shares_of[d][k]: the share of d's secret held by peers[d][k].
  std::vector<std::vector<sa::Share>> self_shares, key_shares;
};

Fleet MakeFleet(uint64_t seed) {
  Fleet f;
  Drbg random;
  EXPECT_TRUE(random.SeedDeterministic(seed).ok());
  std::mt19937_64 rng(seed);
  // A ring in a random order, each device joined to 3 on either side.
  std::vector<uint32_t> order(kN);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  f.peers.assign(kN, {});
  for (uint32_t i = 0; i < kN; ++i) {
    for (uint32_t k = 1; k <= 3; ++k) {
      const uint32_t a = order[i], b = order[(i + k) % kN];
      f.peers[a].push_back(b);
      f.peers[b].push_back(a);
    }
  }
  for (auto& p : f.peers) std::sort(p.begin(), p.end());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  f.keys.resize(kN);
  f.self.resize(kN);
  f.x.assign(kN, std::vector<float>(kL));
  f.masked.assign(kN, std::vector<uint32_t>(kL));
  f.self_shares.assign(kN, {});
  f.key_shares.assign(kN, {});
  for (uint32_t d = 0; d < kN; ++d) {
    f.keys[d] = std::make_unique<sa::RoundKeyPair>();
    EXPECT_TRUE(f.keys[d]->Generate(&crypto::DrbgRandom, &random).ok());
    EXPECT_TRUE(random.Fill(Span<uint8_t>(f.self[d].bytes, sa::kSeedBytes)).ok());
    std::vector<uint64_t> xs;
    for (uint32_t p : f.peers[d]) xs.push_back(p + 1);
    f.self_shares[d].resize(xs.size());
    f.key_shares[d].resize(xs.size());
    EXPECT_TRUE(sa::ShareSecret(ConstByteSpan(f.self[d].bytes, sa::kSeedBytes), kT, Span<const uint64_t>(xs), random,
                                Span<sa::Share>(f.self_shares[d]))
                    .ok());
    EXPECT_TRUE(sa::ShareSecret(f.keys[d]->secret(), kT, Span<const uint64_t>(xs), random,
                                Span<sa::Share>(f.key_shares[d]))
                    .ok());
  }
  for (uint32_t d = 0; d < kN; ++d) {
    for (float& v : f.x[d]) v = u(rng);
    EXPECT_TRUE(sa::EncodeFixedPoint(kCode, Span<const float>(f.x[d]), Span<uint32_t>(f.masked[d])).ok());
    EXPECT_TRUE(sa::ApplyMask(f.self[d], kRound, sa::MaskSign::kAdd, Span<uint32_t>(f.masked[d])).ok());
    for (uint32_t p : f.peers[d]) {
      sa::MaskSeed s;
      EXPECT_TRUE(sa::PairMaskSeed(*f.keys[d], d, f.keys[p]->public_key(), p, kRound, &crypto::DrbgRandom, &random, &s)
                      .ok());
      EXPECT_TRUE(sa::ApplyMask(s, kRound, sa::PairSign(d, p), Span<uint32_t>(f.masked[d])).ok());
    }
  }
  return f;
}

// What the server gets when `dropped` vanish after masking: each surviving
// holder reveals, for each device whose share it holds, the self-seed share
// (device reported) or the secret share (device dropped).
RoundView ViewOf(const Fleet& f, const std::set<uint32_t>& dropped) {
  RoundView v;
  v.round = kRound;
  v.threshold = kT;
  v.length = kL;
  for (uint32_t d = 0; d < kN; ++d) {
    const auto key = f.keys[d]->public_key();
    v.public_keys[d] = std::vector<uint8_t>(key.begin(), key.end());
    v.peers[d] = f.peers[d];
    const bool gone = dropped.count(d) != 0;
    if (!gone) v.masked[d] = f.masked[d];
    auto& out = gone ? v.secret_shares[d] : v.self_seed_shares[d];
    const auto& shares = gone ? f.key_shares[d] : f.self_shares[d];
    for (size_t k = 0; k < f.peers[d].size(); ++k) {
      if (dropped.count(f.peers[d][k]) == 0) out.push_back(shares[k]);
    }
  }
  return v;
}

bool Recoverable(const Fleet& f, const std::set<uint32_t>& dropped) {
  for (uint32_t d = 0; d < kN; ++d) {
    uint32_t holders = 0;
    for (uint32_t p : f.peers[d]) holders += dropped.count(p) == 0 ? 1 : 0;
    if (holders < kT) return false;
  }
  return true;
}

TEST(SecaggUnmaskTest, TheReportersSumSurvivesDropoutsOrTheRoundAborts) {
  const Fleet f = MakeFleet(7);
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(8).ok());
  std::mt19937_64 rng(9);
  int succeeded = 0, aborted = 0;
  for (uint32_t drop : {0u, 3u, 9u}) {  // 0 %, 10 %, 30 %
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<uint32_t> ids(kN);
      std::iota(ids.begin(), ids.end(), 0u);
      std::shuffle(ids.begin(), ids.end(), rng);
      const std::set<uint32_t> dropped(ids.begin(), ids.begin() + drop);
      const RoundResult r = Unmask(ViewOf(f, dropped), random);
      if (!Recoverable(f, dropped)) {
        EXPECT_FALSE(r.ok()) << drop << " dropped, trial " << trial;
        EXPECT_TRUE(r.sum.empty());
        ++aborted;
        continue;
      }
      ASSERT_TRUE(r.ok()) << r.error;
      ++succeeded;
      EXPECT_EQ(r.included.size(), kN - drop);
      EXPECT_EQ(r.dropped.size(), drop);
      std::vector<float> got(kL);
      ASSERT_TRUE(sa::DecodeFixedPointSum(kCode, Span<const uint32_t>(r.sum), Span<float>(got)).ok());
      for (size_t i = 0; i < kL; ++i) {
        double want = 0;
        for (uint32_t d = 0; d < kN; ++d) {
          if (dropped.count(d) == 0) want += f.x[d][i];
        }
        ASSERT_NEAR(got[i], want, kN / (2.0 * kCode.scale) + 1e-3) << drop << " dropped, word " << i;
      }
    }
  }
  EXPECT_GE(succeeded, 8);  // every 0 % and 10 % trial (3 dropped cannot strand a device of 6 peers at t = 3)
  (void)aborted;
}

TEST(SecaggUnmaskTest, TooFewHoldersBadSharesAndBadVectorsAbortTheRound) {
  const Fleet f = MakeFleet(11);
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(12).ok());
  // Device 0 reports, but 4 of its 6 peers vanish: its self seed has 2
  // holders left, fewer than 3.
  std::set<uint32_t> dropped(f.peers[0].begin(), f.peers[0].begin() + 4);
  RoundResult r = Unmask(ViewOf(f, dropped), random);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.sum.empty());
  EXPECT_NE(r.error.find("device 0"), std::string::npos) << r.error;
  // Shares of another device's secret for a dropped one do not open its key.
  dropped = {5};
  RoundView v = ViewOf(f, dropped);
  v.secret_shares[5].clear();
  for (size_t k = 0; k < f.peers[6].size(); ++k) v.secret_shares[5].push_back(f.key_shares[6][k]);
  r = Unmask(v, random);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("do not open"), std::string::npos) << r.error;
  // A vector of another length.
  v = ViewOf(f, {});
  v.masked[3].pop_back();
  EXPECT_FALSE(Unmask(v, random).ok());
  // Unchanged, it works: the sum of every input.
  v = ViewOf(f, {});
  EXPECT_TRUE(Unmask(v, random).ok());
}

// kCAGC Protocol 4 as written: pair masks only; the sum comes out when
// everyone reports, and a single missing device aborts the round.
TEST(SecaggUnmaskTest, PaperModeSumsPairMasksOnlyAndRefusesDropouts) {
  Fleet f = MakeFleet(13);
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(14).ok());
  // The paper's devices add no self mask: take it back out of the fleet's.
  for (uint32_t d = 0; d < kN; ++d) {
    ASSERT_TRUE(sa::ApplyMask(f.self[d], kRound, sa::MaskSign::kSubtract, Span<uint32_t>(f.masked[d])).ok());
  }
  RoundView v = ViewOf(f, {});
  v.paper = true;
  v.self_seed_shares.clear();
  const RoundResult r = Unmask(v, random);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> got(kL);
  ASSERT_TRUE(sa::DecodeFixedPointSum(kCode, Span<const uint32_t>(r.sum), Span<float>(got)).ok());
  for (size_t i = 0; i < kL; ++i) {
    double want = 0;
    for (uint32_t d = 0; d < kN; ++d) want += f.x[d][i];
    ASSERT_NEAR(got[i], want, kN / (2.0 * kCode.scale) + 1e-3) << i;
  }
  RoundView one_gone = ViewOf(f, {4});
  one_gone.paper = true;
  const RoundResult refused = Unmask(one_gone, random);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("no dropout recovery"), std::string::npos) << refused.error;
}

}  // namespace
}  // namespace nodefl::server::secagg
