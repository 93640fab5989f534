// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The arithmetic of secure aggregation (sdk/secagg): GF(2^61 - 1) against a
// slow reference, Shamir sharing (any t shares reconstruct, t - 1 shares
// are distributed alike whatever the secret, malformed shares refused), and
// the fixed-point code (round trip, clipping, sums up to MaxSummands exact,
// one more wraps). Run on x86-64, aarch64 and armhf alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"
#include "nodefl/secagg/field.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/secagg/masks.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"

namespace nodefl::secagg {
namespace {

// a * b mod p by doubling and adding: slow, obviously right.
uint64_t SlowMul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  for (int bit = 60; bit >= 0; --bit) {
    r = FieldAdd(r, r);
    if ((b >> bit) & 1u) r = FieldAdd(r, a);
  }
  return r;
}

TEST(SecaggFieldTest, MultiplicationMatchesTheDefinitionAndInversesInvert) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> values = {0, 1, 2, kFieldPrime - 1, kFieldPrime - 2, uint64_t{1} << 32,
                                  (uint64_t{1} << 32) - 1, uint64_t{1} << 60, (uint64_t{1} << 61) - 2};
  for (int i = 0; i < 300; ++i) values.push_back(rng() % kFieldPrime);
  for (uint64_t a : values) {
    for (int j = 0; j < 8; ++j) {
      const uint64_t b = values[rng() % values.size()];
      ASSERT_EQ(FieldMul(a, b), SlowMul(a, b)) << a << " * " << b;
    }
    if (a != 0) {
      ASSERT_EQ(FieldMul(a, FieldInverse(a)), 1u) << a;
    }
    ASSERT_EQ(FieldSub(FieldAdd(a, 12345), 12345), a);
  }
  EXPECT_EQ(FieldInverse(0), 0u);
  EXPECT_EQ(FieldMul(kFieldPrime - 1, kFieldPrime - 1), 1u);  // (-1)^2
}

std::vector<uint8_t> Secret(uint64_t seed, size_t bytes) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> s(bytes);
  for (uint8_t& b : s) b = static_cast<uint8_t>(rng());
  return s;
}

TEST(SecaggShamirTest, AnyThresholdOfSharesGivesTheSecretBack) {
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(11).ok());
  std::mt19937_64 pick(3);
  for (size_t bytes : {1u, 7u, 8u, 16u, 32u}) {
    for (uint32_t t : {1u, 2u, 4u, 10u}) {
      const std::vector<uint8_t> secret = Secret(bytes * 100 + t, bytes);
      std::vector<uint64_t> xs(10);
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = 1000 + 37 * i;  // any distinct nonzero points
      std::vector<Share> shares(xs.size());
      ASSERT_TRUE(ShareSecret(ConstByteSpan(secret), t, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
      for (int trial = 0; trial < 20; ++trial) {
        std::shuffle(shares.begin(), shares.end(), pick);
        std::vector<uint8_t> back(bytes);
        ASSERT_TRUE(ReconstructSecret(Span<const Share>(shares.data(), t), t, ByteSpan(back)).ok());
        ASSERT_EQ(back, secret) << bytes << " bytes, t = " << t;
      }
      if (t > 1) {
        // t - 1 shares, read as if the threshold were t - 1, give something
        // else (or are refused): they do not determine the secret.
        std::vector<uint8_t> back(bytes);
        const Status s = ReconstructSecret(Span<const Share>(shares.data(), t - 1), t - 1, ByteSpan(back));
        EXPECT_TRUE(!s.ok() || back != secret);
        EXPECT_FALSE(ReconstructSecret(Span<const Share>(shares.data(), t - 1), t, ByteSpan(back)).ok());
      }
    }
  }
}

// The full mask graph of 1,000 devices shares among 999 peers with t = 500;
// a fixed bound of 256 on t once made every such round abort at unmasking.
TEST(SecaggShamirTest, ThresholdsInTheHundredsGiveTheSecretBack) {
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(12).ok());
  std::mt19937_64 pick(4);
  const std::vector<uint8_t> secret = Secret(99, 32);
  std::vector<uint64_t> xs(999);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = i + 1;  // the holders' ids + 1, as the service uses
  std::vector<Share> shares(xs.size());
  for (uint32_t t : {257u, 500u, 999u}) {
    ASSERT_TRUE(ShareSecret(ConstByteSpan(secret), t, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
    std::shuffle(shares.begin(), shares.end(), pick);
    std::vector<uint8_t> back(secret.size());
    ASSERT_TRUE(ReconstructSecret(Span<const Share>(shares.data(), t), t, ByteSpan(back)).ok()) << t;
    EXPECT_EQ(back, secret) << t;
    EXPECT_FALSE(ReconstructSecret(Span<const Share>(shares.data(), t - 1), t, ByteSpan(back)).ok()) << t;
  }
}

// t = 3: the two shares at x = 5 and x = 9 must have the same (uniform)
// law for a secret of all zeros and one of all ones. 6,000 sharings each;
// the top 4 bits of both shares' first chunk in 16 x 16 cells; a two-sample
// chi-square with 255 degrees of freedom stays below 377 (p = 10^-6, the
// project's significance for statistical tests), and each law's fit to
// uniform too. Sharing without the random coefficients (shares = secret)
// puts every sharing in one cell and fails all three by far.
TEST(SecaggShamirTest, FewerThanThresholdSharesLookTheSameWhateverTheSecret) {
  auto histogram = [](uint8_t fill, uint64_t seed) {
    Drbg random;
    EXPECT_TRUE(random.SeedDeterministic(seed).ok());
    std::vector<uint8_t> secret(16, fill);
    const std::vector<uint64_t> xs = {5, 9, 13};
    std::vector<double> cells(256, 0.0);
    for (int i = 0; i < 6000; ++i) {
      Share shares[3];
      EXPECT_TRUE(ShareSecret(ConstByteSpan(secret), 3, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
      const uint64_t a = shares[0].y[0] >> 57, b = shares[1].y[0] >> 57;  // top 4 of 61 bits
      cells[a * 16 + b] += 1;
    }
    return cells;
  };
  const std::vector<double> zeros = histogram(0x00, 21), ones = histogram(0xFF, 22);
  double two_sample = 0, uniform_zeros = 0, uniform_ones = 0;
  // The top-4-bit cells are not exactly equiprobable (p is just below 2^61):
  // cell 15 of each coordinate is short by 2^-57 of its mass, negligible.
  const double expected = 6000.0 / 256;
  for (int c = 0; c < 256; ++c) {
    const double total = zeros[c] + ones[c];
    if (total > 0) two_sample += (zeros[c] - ones[c]) * (zeros[c] - ones[c]) / total;
    uniform_zeros += (zeros[c] - expected) * (zeros[c] - expected) / expected;
    uniform_ones += (ones[c] - expected) * (ones[c] - expected) / expected;
  }
  EXPECT_LT(two_sample, 377.0);
  EXPECT_LT(uniform_zeros, 377.0);
  EXPECT_LT(uniform_ones, 377.0);
}

TEST(SecaggShamirTest, MalformedSharesAndArgumentsAreRefused) {
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(13).ok());
  const std::vector<uint8_t> secret = Secret(1, 32);
  const std::vector<uint64_t> xs = {1, 2, 3, 4};
  std::vector<Share> shares(4);
  ASSERT_TRUE(ShareSecret(ConstByteSpan(secret), 3, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
  std::vector<uint8_t> back(32);
  auto reconstruct = [&](std::vector<Share> s) { return ReconstructSecret(Span<const Share>(s), 3, ByteSpan(back)); };
  std::vector<Share> bad = shares;
  bad[1].x = bad[0].x;  // a repeated point
  EXPECT_FALSE(reconstruct(bad).ok());
  bad = shares;
  bad[2].x = 0;
  EXPECT_FALSE(reconstruct(bad).ok());
  bad = shares;
  bad[2].x = kFieldPrime;
  EXPECT_FALSE(reconstruct(bad).ok());
  bad = shares;
  bad[0].y[3] = kFieldPrime;  // not a field element
  EXPECT_FALSE(reconstruct(bad).ok());
  bad = shares;
  bad[0].y[4] ^= 1;  // tampered: refused or a different secret, never the right one by accident
  {
    const Status s = reconstruct(bad);
    EXPECT_TRUE(!s.ok() || back != secret);
  }
  EXPECT_FALSE(ReconstructSecret(Span<const Share>(shares.data(), 2), 3, ByteSpan(back)).ok());
  EXPECT_FALSE(ReconstructSecret(Span<const Share>(shares), 0, ByteSpan(back)).ok());
  std::vector<uint8_t> too_long(33);
  EXPECT_FALSE(ReconstructSecret(Span<const Share>(shares), 3, ByteSpan(too_long)).ok());
  EXPECT_TRUE(reconstruct(shares).ok());
  EXPECT_EQ(back, secret);
  // Sharing: threshold above the holders, repeated or zero points, empty
  // or oversized secrets, a failed Drbg.
  EXPECT_FALSE(ShareSecret(ConstByteSpan(secret), 5, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
  const std::vector<uint64_t> repeated = {1, 2, 2, 4}, zero = {0, 1, 2, 3};
  EXPECT_FALSE(ShareSecret(ConstByteSpan(secret), 2, Span<const uint64_t>(repeated), random, Span<Share>(shares)).ok());
  EXPECT_FALSE(ShareSecret(ConstByteSpan(secret), 2, Span<const uint64_t>(zero), random, Span<Share>(shares)).ok());
  EXPECT_FALSE(ShareSecret(ConstByteSpan(), 2, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
  EXPECT_FALSE(ShareSecret(ConstByteSpan(too_long), 2, Span<const uint64_t>(xs), random, Span<Share>(shares)).ok());
  Drbg unseeded;
  EXPECT_FALSE(ShareSecret(ConstByteSpan(secret), 2, Span<const uint64_t>(xs), unseeded, Span<Share>(shares)).ok());
}

TEST(SecaggFixedPointTest, SumsDecodeWithinRoundingUpToTheBoundAndWrapPastIt) {
  const FixedPoint code{2.0f, 1024.0f};
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-2.5f, 2.5f);
  constexpr int kN = 1000, kL = 64;
  std::vector<uint32_t> sum(kL, 0), q(kL);
  std::vector<double> want(kL, 0.0);
  size_t clipped = 0;
  for (int n = 0; n < kN; ++n) {
    std::vector<float> x(kL);
    for (float& v : x) v = u(rng);
    Result<size_t> c = EncodeFixedPoint(code, Span<const float>(x), Span<uint32_t>(q));
    ASSERT_TRUE(c.ok());
    clipped += *c;
    for (int i = 0; i < kL; ++i) {
      sum[i] += q[i];  // mod 2^32, as the aggregation sums
      want[i] += std::clamp(x[i], -2.0f, 2.0f);
    }
  }
  EXPECT_GT(clipped, 0u);  // a fifth of the draws lie outside +-2
  std::vector<float> got(kL);
  ASSERT_TRUE(DecodeFixedPointSum(code, Span<const uint32_t>(sum), Span<float>(got)).ok());
  for (int i = 0; i < kL; ++i) EXPECT_NEAR(got[i], want[i], kN / (2.0 * code.scale) + 1e-3) << i;

  // MaxSummands codes of +clip sum exactly; one more wraps to negative.
  const FixedPoint tight{1.0f, 1e6f};
  const uint64_t n = MaxSummands(tight);
  EXPECT_EQ(n, 2147u);  // floor((2^31 - 1) / 10^6)
  const float top = 1.0f;
  uint32_t code_top = 0;
  ASSERT_TRUE(EncodeFixedPoint(tight, Span<const float>(&top, 1), Span<uint32_t>(&code_top, 1)).ok());
  uint32_t s = 0;
  for (uint64_t i = 0; i < n; ++i) s += code_top;
  float decoded = 0;
  ASSERT_TRUE(DecodeFixedPointSum(tight, Span<const uint32_t>(&s, 1), Span<float>(&decoded, 1)).ok());
  EXPECT_NEAR(decoded, static_cast<float>(n), 1e-3f * n);
  s += code_top;
  ASSERT_TRUE(DecodeFixedPointSum(tight, Span<const uint32_t>(&s, 1), Span<float>(&decoded, 1)).ok());
  EXPECT_LT(decoded, 0.0f);

  // Refusals: NaN, sizes, bad codes.
  const float nan = std::nanf("");
  EXPECT_FALSE(EncodeFixedPoint(code, Span<const float>(&nan, 1), Span<uint32_t>(&code_top, 1)).ok());
  EXPECT_FALSE(EncodeFixedPoint(code, Span<const float>(&top, 1), Span<uint32_t>()).ok());
  EXPECT_FALSE(EncodeFixedPoint(FixedPoint{0.0f, 1.0f}, Span<const float>(&top, 1), Span<uint32_t>(&code_top, 1)).ok());
  EXPECT_FALSE(EncodeFixedPoint(FixedPoint{1.0f, 4e9f}, Span<const float>(&top, 1), Span<uint32_t>(&code_top, 1)).ok());
  EXPECT_EQ(MaxSummands(FixedPoint{1.0f, -1.0f}), 0u);
  // Negative values round-trip through two's complement.
  const float neg = -1.5f;
  ASSERT_TRUE(EncodeFixedPoint(code, Span<const float>(&neg, 1), Span<uint32_t>(&code_top, 1)).ok());
  ASSERT_TRUE(DecodeFixedPointSum(code, Span<const uint32_t>(&code_top, 1), Span<float>(&decoded, 1)).ok());
  EXPECT_FLOAT_EQ(decoded, -1.5f);
}

// AES-256 of the zero block under the zero key is dc95c078 a2408989
// ad48a214 92842087 (FIPS-197-style known answer): stream 0's first block.
TEST(SecaggMaskTest, TheStreamIsAes256CounterModeAndStreamsDiffer) {
  MaskSeed zero;
  uint32_t words[8];
  ASSERT_TRUE(ExpandMask(zero, 0, Span<uint32_t>(words)).ok());
  EXPECT_EQ(words[0], 0x78c095dcu);
  EXPECT_EQ(words[1], 0x898940a2u);
  EXPECT_EQ(words[2], 0x14a248adu);
  EXPECT_EQ(words[3], 0x87208492u);
  uint32_t other[8], again[8];
  ASSERT_TRUE(ExpandMask(zero, 1, Span<uint32_t>(other)).ok());
  ASSERT_TRUE(ExpandMask(zero, 0, Span<uint32_t>(again)).ok());
  EXPECT_TRUE(std::equal(words, words + 8, again));
  EXPECT_FALSE(std::equal(words, words + 8, other));
  // A long vector is one stream: its first 8 words are the short one's.
  std::vector<uint32_t> long_words(1000);
  ASSERT_TRUE(ExpandMask(zero, 0, Span<uint32_t>(long_words)).ok());
  EXPECT_TRUE(std::equal(words, words + 8, long_words.begin()));
  // Adding and then subtracting a mask restores the vector.
  std::vector<uint32_t> v(1000, 7);
  MaskSeed seed;
  seed.bytes[0] = 1;
  ASSERT_TRUE(ApplyMask(seed, 3, MaskSign::kAdd, Span<uint32_t>(v)).ok());
  EXPECT_NE(v[500], 7u);
  ASSERT_TRUE(ApplyMask(seed, 3, MaskSign::kSubtract, Span<uint32_t>(v)).ok());
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](uint32_t x) { return x == 7; }));
}

// One round of the masking arithmetic (seeds given, the key agreement and
// the Shamir sharing of b_u and s_v aside): 12 devices, each pair with a
// seed, each device a self seed; for 0, 1 and 4 of them dropping after
// masking, the server's unmasking of the reporters' sum gives their inputs'
// sum; and a masked vector is uniform whatever the input (its top byte
// over 1,000 words, chi-square with 255 degrees of freedom below 377).
TEST(SecaggMaskTest, MasksCancelAndTheServerRemovesWhatDroppedPeersLeft) {
  constexpr uint32_t kN = 12;
  constexpr size_t kL = 1000;
  const FixedPoint code{4.0f, 4096.0f};
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  auto random_seed = [&] {
    MaskSeed s;
    for (uint8_t& b : s.bytes) b = static_cast<uint8_t>(rng());
    return s;
  };
  std::vector<MaskSeed> self(kN);
  for (MaskSeed& s : self) s = random_seed();
  std::vector<std::vector<MaskSeed>> pair(kN, std::vector<MaskSeed>(kN));
  for (uint32_t a = 0; a < kN; ++a) {
    for (uint32_t b = a + 1; b < kN; ++b) pair[a][b] = pair[b][a] = random_seed();
  }
  std::vector<std::vector<float>> x(kN, std::vector<float>(kL));
  std::vector<std::vector<uint32_t>> masked(kN, std::vector<uint32_t>(kL));
  constexpr uint64_t kRound = 42;
  for (uint32_t a = 0; a < kN; ++a) {
    for (float& v : x[a]) v = u(rng);
    ASSERT_TRUE(EncodeFixedPoint(code, Span<const float>(x[a]), Span<uint32_t>(masked[a])).ok());
    ASSERT_TRUE(ApplyMask(self[a], kRound, MaskSign::kAdd, Span<uint32_t>(masked[a])).ok());
    for (uint32_t b = 0; b < kN; ++b) {
      if (b == a) continue;
      ASSERT_TRUE(ApplyMask(pair[a][b], kRound, PairSign(a, b), Span<uint32_t>(masked[a])).ok());
    }
  }
  for (const std::vector<uint32_t>& dropped : {std::vector<uint32_t>{}, std::vector<uint32_t>{5},
                                              std::vector<uint32_t>{0, 3, 7, 11}}) {
    auto gone = [&](uint32_t d) { return std::find(dropped.begin(), dropped.end(), d) != dropped.end(); };
    std::vector<uint32_t> sum(kL, 0);
    std::vector<double> want(kL, 0.0);
    for (uint32_t a = 0; a < kN; ++a) {
      if (gone(a)) continue;
      for (size_t i = 0; i < kL; ++i) {
        sum[i] += masked[a][i];
        want[i] += x[a][i];
      }
      // The server, with b_a and the dropped peers' pair seeds recovered.
      ASSERT_TRUE(ApplyMask(self[a], kRound, MaskSign::kSubtract, Span<uint32_t>(sum)).ok());
      for (uint32_t d : dropped) {
        const MaskSign undo = Opposite(PairSign(a, d));
        ASSERT_TRUE(ApplyMask(pair[a][d], kRound, undo, Span<uint32_t>(sum)).ok());
      }
    }
    std::vector<float> got(kL);
    ASSERT_TRUE(DecodeFixedPointSum(code, Span<const uint32_t>(sum), Span<float>(got)).ok());
    for (size_t i = 0; i < kL; ++i) {
      ASSERT_NEAR(got[i], want[i], kN / (2.0 * code.scale) + 1e-3) << dropped.size() << " dropped, word " << i;
    }
  }
  // A masked zero vector looks uniform.
  std::vector<uint32_t> zero(kL, 0);
  ASSERT_TRUE(ApplyMask(self[0], kRound, MaskSign::kAdd, Span<uint32_t>(zero)).ok());
  std::vector<double> cells(256, 0.0);
  for (uint32_t w : zero) cells[w >> 24] += 1;
  double chi = 0;
  for (double c : cells) chi += (c - kL / 256.0) * (c - kL / 256.0) / (kL / 256.0);
  EXPECT_LT(chi, 377.0);
}

TEST(SecaggRoundKeysTest, BothEndsAndTheServerDeriveThePairSeedAlike) {
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(31).ok());
  RoundKeyPair a, b, c;
  ASSERT_TRUE(a.Generate(&crypto::DrbgRandom, &random).ok());
  ASSERT_TRUE(b.Generate(&crypto::DrbgRandom, &random).ok());
  ASSERT_TRUE(c.Generate(&crypto::DrbgRandom, &random).ok());
  MaskSeed ab, ba, ab_next, ac;
  ASSERT_TRUE(PairMaskSeed(a, 3, b.public_key(), 9, 1, &crypto::DrbgRandom, &random, &ab).ok());
  ASSERT_TRUE(PairMaskSeed(b, 9, a.public_key(), 3, 1, &crypto::DrbgRandom, &random, &ba).ok());
  EXPECT_TRUE(std::equal(ab.bytes, ab.bytes + kSeedBytes, ba.bytes));
  ASSERT_TRUE(PairMaskSeed(a, 3, b.public_key(), 9, 2, &crypto::DrbgRandom, &random, &ab_next).ok());
  ASSERT_TRUE(PairMaskSeed(a, 3, c.public_key(), 9, 1, &crypto::DrbgRandom, &random, &ac).ok());
  EXPECT_FALSE(std::equal(ab.bytes, ab.bytes + kSeedBytes, ab_next.bytes));  // another round
  EXPECT_FALSE(std::equal(ab.bytes, ab.bytes + kSeedBytes, ac.bytes));       // another key
  // The server, from b's secret as reconstructed: the same public key and seed.
  RoundKeyPair rebuilt;
  ASSERT_TRUE(rebuilt.FromSecret(b.secret()).ok());
  EXPECT_TRUE(std::equal(rebuilt.public_key().begin(), rebuilt.public_key().end(), b.public_key().begin()));
  MaskSeed server;
  ASSERT_TRUE(PairMaskSeed(rebuilt, 9, a.public_key(), 3, 1, &crypto::DrbgRandom, &random, &server).ok());
  EXPECT_TRUE(std::equal(ab.bytes, ab.bytes + kSeedBytes, server.bytes));
  // Refusals: a point off the curve, a truncated key, equal ids, a zero secret.
  std::vector<uint8_t> off(b.public_key().begin(), b.public_key().end());
  off[40] ^= 1;
  EXPECT_EQ(PairMaskSeed(a, 3, ConstByteSpan(off), 9, 1, &crypto::DrbgRandom, &random, &server).code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(PairMaskSeed(a, 3, b.public_key().subspan(1), 9, 1, &crypto::DrbgRandom, &random, &server).code(),
            StatusCode::kUnauthenticated);
  EXPECT_FALSE(PairMaskSeed(a, 3, b.public_key(), 3, 1, &crypto::DrbgRandom, &random, &server).ok());
  const std::vector<uint8_t> zero(kRoundSecretBytes, 0);
  EXPECT_FALSE(rebuilt.FromSecret(ConstByteSpan(zero)).ok());
  EXPECT_FALSE(rebuilt.valid());
}

// One dropout-robust round end to end in one process (Bonawitz et al.,
// CCS'17, without the transport): 8 devices with round keys and self
// seeds, both Shamir-shared 5-of-8 among the devices; inputs masked; some
// devices vanish after masking; the server reconstructs the reporters'
// self seeds and the vanished devices' round secrets from the survivors'
// shares, removes exactly those masks, and gets the reporters' sum. With
// fewer than 5 survivors the reconstruction is refused: nothing unmasked.
TEST(SecaggRoundTest, TheSumOfTheReportersSurvivesDropoutsAndTooFewSurvivorsAbort) {
  constexpr uint32_t kN = 8, kT = 5;
  constexpr size_t kL = 256;
  constexpr uint64_t kRound = 7;
  const FixedPoint code{2.0f, 8192.0f};
  Drbg random;
  ASSERT_TRUE(random.SeedDeterministic(41).ok());
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint64_t> xs(kN);
  for (uint32_t d = 0; d < kN; ++d) xs[d] = d + 1;
  std::vector<RoundKeyPair> keys(kN);
  std::vector<MaskSeed> self(kN);
  // shares[d][h]: holder h's share of device d's secret key (and of b_d).
  std::vector<std::vector<Share>> key_shares(kN, std::vector<Share>(kN)), self_shares(kN, std::vector<Share>(kN));
  for (uint32_t d = 0; d < kN; ++d) {
    ASSERT_TRUE(keys[d].Generate(&crypto::DrbgRandom, &random).ok());
    ASSERT_TRUE(random.Fill(Span<uint8_t>(self[d].bytes, kSeedBytes)).ok());
    ASSERT_TRUE(ShareSecret(keys[d].secret(), kT, Span<const uint64_t>(xs), random, Span<Share>(key_shares[d])).ok());
    ASSERT_TRUE(ShareSecret(ConstByteSpan(self[d].bytes, kSeedBytes), kT, Span<const uint64_t>(xs), random,
                            Span<Share>(self_shares[d]))
                    .ok());
  }
  std::vector<std::vector<float>> x(kN, std::vector<float>(kL));
  std::vector<std::vector<uint32_t>> masked(kN, std::vector<uint32_t>(kL));
  for (uint32_t d = 0; d < kN; ++d) {
    for (float& v : x[d]) v = u(rng);
    ASSERT_TRUE(EncodeFixedPoint(code, Span<const float>(x[d]), Span<uint32_t>(masked[d])).ok());
    ASSERT_TRUE(ApplyMask(self[d], kRound, MaskSign::kAdd, Span<uint32_t>(masked[d])).ok());
    for (uint32_t p = 0; p < kN; ++p) {
      if (p == d) continue;
      MaskSeed s;
      ASSERT_TRUE(PairMaskSeed(keys[d], d, keys[p].public_key(), p, kRound, &crypto::DrbgRandom, &random, &s).ok());
      ASSERT_TRUE(ApplyMask(s, kRound, PairSign(d, p), Span<uint32_t>(masked[d])).ok());
    }
  }
  for (const std::vector<uint32_t>& dropped :
       {std::vector<uint32_t>{}, std::vector<uint32_t>{6}, std::vector<uint32_t>{1, 4, 6}, std::vector<uint32_t>{0, 2, 4, 6}}) {
    auto gone = [&](uint32_t d) { return std::find(dropped.begin(), dropped.end(), d) != dropped.end(); };
    std::vector<uint32_t> survivors;
    for (uint32_t d = 0; d < kN; ++d) {
      if (!gone(d)) survivors.push_back(d);
    }
    // Survivors' shares of device d's secret (the server asks each survivor
    // for one of the two, never both).
    auto gather = [&](const std::vector<std::vector<Share>>& shares, uint32_t d) {
      std::vector<Share> out;
      for (uint32_t h : survivors) out.push_back(shares[d][h]);
      return out;
    };
    std::vector<uint32_t> sum(kL, 0);
    std::vector<double> want(kL, 0.0);
    bool aborted = false;
    for (uint32_t d : survivors) {
      for (size_t i = 0; i < kL; ++i) {
        sum[i] += masked[d][i];
        want[i] += x[d][i];
      }
      MaskSeed b;
      const std::vector<Share> held = gather(self_shares, d);
      if (!ReconstructSecret(Span<const Share>(held), kT, ByteSpan(b.bytes, kSeedBytes)).ok()) {
        aborted = true;
        break;
      }
      ASSERT_TRUE(ApplyMask(b, kRound, MaskSign::kSubtract, Span<uint32_t>(sum)).ok());
    }
    for (uint32_t v : dropped) {
      if (aborted) break;
      uint8_t secret[kRoundSecretBytes];
      const std::vector<Share> held = gather(key_shares, v);
      if (!ReconstructSecret(Span<const Share>(held), kT, ByteSpan(secret)).ok()) {
        aborted = true;
        break;
      }
      RoundKeyPair rebuilt;
      ASSERT_TRUE(rebuilt.FromSecret(ConstByteSpan(secret)).ok());
      for (uint32_t d : survivors) {
        MaskSeed s;
        ASSERT_TRUE(PairMaskSeed(rebuilt, v, keys[d].public_key(), d, kRound, &crypto::DrbgRandom, &random, &s).ok());
        const MaskSign undo = Opposite(PairSign(d, v));
        ASSERT_TRUE(ApplyMask(s, kRound, undo, Span<uint32_t>(sum)).ok());
      }
    }
    if (survivors.size() < kT) {
      EXPECT_TRUE(aborted) << "only " << survivors.size() << " survivors";
      continue;
    }
    ASSERT_FALSE(aborted) << dropped.size() << " dropped";
    std::vector<float> got(kL);
    ASSERT_TRUE(DecodeFixedPointSum(code, Span<const uint32_t>(sum), Span<float>(got)).ok());
    for (size_t i = 0; i < kL; ++i) {
      ASSERT_NEAR(got[i], want[i], kN / (2.0 * code.scale) + 1e-3) << dropped.size() << " dropped, word " << i;
    }
  }
}

}  // namespace
}  // namespace nodefl::secagg
