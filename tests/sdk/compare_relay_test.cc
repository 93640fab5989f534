// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What the relay sees of a secure comparison: every comparison message
// travels sealed with the pair's job keys, exactly as SecureCompareRole
// sends it (session id | message, seal::Seal). The relay must not be able
// to read or open any of it, and the sizes it sees must not depend on the
// inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/comparison_session.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/seal/seal.h"
#include "nodefl/tls/credentials.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::compare {
namespace {

using testing::TestPki;

// A device's credentials and DRBG: all the sealed runs here need of one.
using Device = testing::DeviceCredentials;

// Sealed messages of one comparison run between devices 3 (A) and 4 (B),
// as the relay sees them, with the plaintexts for checking.
struct Observed {
  std::vector<std::vector<uint8_t>> sealed;
  std::vector<std::vector<uint8_t>> plain;
  bool correct = false;
};

Observed RunSealed(TestPki& pki, uint32_t x, uint32_t y, seal::PairKeys* keys_out) {
  Device a(pki, 3), b(pki, 4);
  const std::vector<uint8_t> salt(16, 0x42);
  seal::PairKeys pair, job;
  const std::vector<uint8_t> cert_b = pki.Device(4).certificate_der;
  EXPECT_TRUE(seal::VerifyAndDerivePairKeys(a.credentials, cert_b, 3, 4, &crypto::DrbgRandom, &a.drbg, &pair).ok());
  seal::JobKeyPair a_key, b_key;
  EXPECT_TRUE(a_key.Generate(9, salt, &crypto::DrbgRandom, &a.drbg).ok());
  EXPECT_TRUE(b_key.Generate(9, salt, &crypto::DrbgRandom, &b.drbg).ok());
  EXPECT_TRUE(seal::DeriveJobKeys(pair, a_key, 3, b_key.public_key(), &crypto::DrbgRandom, &a.drbg, &job).ok());
  *keys_out = job;
  RunShape shape;
  shape.plan = PlanComparison(8).value();
  shape.count = 1;
  shape.max_message_bytes = static_cast<uint32_t>(kCompareMessageBytes);
  std::vector<ComparisonSlot> sa(1), sb(1);
  std::vector<uint8_t> tables(shape.plan.table_bytes());
  ComparisonSession pa(ComparisonStorage{Span<ComparisonSlot>(sa), ByteSpan(tables)});
  ComparisonSession pb(ComparisonStorage{Span<ComparisonSlot>(sb), ByteSpan()});
  ot::OtTag tag;
  const std::vector<uint32_t> vx = {x}, vy = {y};
  EXPECT_TRUE(pa.Start(Role::kA, shape, tag, vx, &crypto::DrbgRandom, &a.drbg).ok());
  EXPECT_TRUE(pb.Start(Role::kB, shape, tag, vy, &crypto::DrbgRandom, &b.drbg).ok());
  Observed seen;
  std::vector<uint8_t> plain(4 + shape.max_message_bytes), sealed(seal::kMaxSealedBytes), opened(4096);
  uint64_t counter[2] = {1, 1};
  bool progress = true;
  while (progress) {
    progress = false;
    for (int p = 0; p < 2; ++p) {
      ComparisonSession& from = p == 0 ? pa : pb;
      ComparisonSession& to = p == 0 ? pb : pa;
      while (true) {
        const Result<size_t> n = from.NextMessage(ByteSpan(plain.data() + 4, shape.max_message_bytes));
        if (!n.ok() || n.value() == 0) break;
        progress = true;
        StoreU32Le(77, plain.data());  // session id
        const uint32_t src = p == 0 ? 3 : 4, dst = p == 0 ? 4 : 3;
        const Result<size_t> s =
            seal::Seal(job, seal::SealHeader{src, dst, 9, counter[p]++}, ConstByteSpan(plain.data(), 4 + n.value()),
                       ByteSpan(sealed));
        EXPECT_TRUE(s.ok());
        seen.sealed.emplace_back(sealed.begin(), sealed.begin() + static_cast<std::ptrdiff_t>(s.value()));
        seen.plain.emplace_back(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(4 + n.value()));
        uint64_t c = 0;
        const Result<size_t> o = seal::Open(job, src, dst, 9, seen.sealed.back(), ByteSpan(opened), &c);
        EXPECT_TRUE(o.ok());
        (void)to.OnMessage(ConstByteSpan(opened.data() + 4, o.value() - 4));
      }
    }
  }
  seen.correct = pa.done() && pb.done() && pa.greater(0) == (x > y) && pb.equal(0) == (x == y);
  return seen;
}

TEST(CompareRelayTest, TheRelaySeesOnlySealedBytesOfInputIndependentSizes) {
  TestPki pki(21);
  seal::PairKeys job;
  const Observed low = RunSealed(pki, 3, 200, &job);
  const Observed high = RunSealed(pki, 255, 0, &job);
  ASSERT_TRUE(low.correct);
  ASSERT_TRUE(high.correct);
  ASSERT_EQ(low.sealed.size(), high.sealed.size());
  for (size_t i = 0; i < low.sealed.size(); ++i) {
    EXPECT_EQ(low.sealed[i].size(), high.sealed[i].size()) << "message " << i;
    EXPECT_EQ(low.sealed[i].size(), low.plain[i].size() + seal::kSealOverheadBytes);
    // No 8-byte stretch of what the parties exchanged shows in the clear.
    const auto& p = low.plain[i];
    const auto& s = low.sealed[i];
    for (size_t at = 0; at + 8 <= p.size(); at += 4) {
      EXPECT_EQ(std::search(s.begin(), s.end(), p.begin() + static_cast<std::ptrdiff_t>(at),
                            p.begin() + static_cast<std::ptrdiff_t>(at + 8)),
                s.end())
          << "message " << i << " offset " << at;
    }
  }
  // The relay holds keys only with devices it is not (here: a third device's
  // pair keys with device 4): none opens device 3's messages.
  Device relay_like(pki, 5);
  seal::PairKeys other, other_job;
  const std::vector<uint8_t> cert_4 = pki.Device(4).certificate_der;
  const std::vector<uint8_t> salt(16, 0x42);
  ASSERT_TRUE(seal::VerifyAndDerivePairKeys(relay_like.credentials, cert_4, 5, 4,
                                            &crypto::DrbgRandom, &relay_like.drbg, &other)
                  .ok());
  seal::JobKeyPair relay_key, key_4;
  ASSERT_TRUE(relay_key.Generate(9, salt, &crypto::DrbgRandom, &relay_like.drbg).ok());
  ASSERT_TRUE(key_4.Generate(9, salt, &crypto::DrbgRandom, &relay_like.drbg).ok());
  ASSERT_TRUE(
      seal::DeriveJobKeys(other, relay_key, 5, key_4.public_key(), &crypto::DrbgRandom, &relay_like.drbg, &other_job)
          .ok());
  std::vector<uint8_t> out(4096);
  uint64_t c = 0;
  for (const auto& s : low.sealed) {
    EXPECT_FALSE(seal::Open(other_job, 3, 4, 9, s, ByteSpan(out), &c).ok());
    EXPECT_FALSE(seal::Open(other_job, 5, 4, 9, s, ByteSpan(out), &c).ok());
  }
}

}  // namespace
}  // namespace nodefl::compare
