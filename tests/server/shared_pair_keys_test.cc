// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The emulator's shared pair-key memo must hand every device exactly the
// keys it would have derived alone, check any certificate bytes it has not
// seen verify, and pass errors through.
#include "nodefl/emulator/shared_pair_keys.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nodefl/random/drbg.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_key_source.h"
#include "test_pki.h"

namespace nodefl::emulator {
namespace {

using testing::TestIdentity;
using testing::TestPki;

struct Device {
  Device(TestPki& pki, uint32_t device_id) : id(device_id), identity(pki.Device(device_id)) {
    EXPECT_TRUE(pki.Load(identity, &credentials).ok());
    EXPECT_TRUE(drbg.SeedDeterministic(device_id).ok());
  }
  uint32_t id;
  TestIdentity identity;
  tls::TlsCredentials credentials;
  Drbg drbg;
};

bool SameKeys(const seal::PairKeys& a, const seal::PairKeys& b) {
  return a.valid && b.valid && a.low_id == b.low_id && a.high_id == b.high_id &&
         std::memcmp(a.low_to_high, b.low_to_high, sizeof(a.low_to_high)) == 0 &&
         std::memcmp(a.high_to_low, b.high_to_low, sizeof(a.high_to_low)) == 0;
}

class SharedPairKeysTest : public ::testing::Test {
 protected:
  SharedPairKeysTest() : pki_(11), a_(pki_, 3), b_(pki_, 4), c_(pki_, 5) {}

  seal::PairKeys Direct(Device& own, const Device& peer) {
    seal::PairKeys keys;
    EXPECT_TRUE(seal::VerifyAndDerivePairKeys(own.credentials, peer.identity.certificate_der, own.id, peer.id,
                                              &crypto::DrbgRandom, &own.drbg, &keys)
                    .ok());
    return keys;
  }
  Status Shared(Device& own, const std::vector<uint8_t>& certificate, uint32_t peer_id, seal::PairKeys* out) {
    const seal::PairKeySource source = memo_.source();
    return source.Derive(own.credentials, certificate, own.id, peer_id, &crypto::DrbgRandom, &own.drbg, out);
  }

  TestPki pki_;
  Device a_, b_, c_;
  SharedPairKeys memo_;
};

TEST_F(SharedPairKeysTest, BothSidesGetTheKeysTheyWouldDeriveAloneAndTheSecondComputesNothing) {
  seal::PairKeys ab, ba, ac;
  ASSERT_TRUE(Shared(a_, b_.identity.certificate_der, b_.id, &ab).ok());
  EXPECT_EQ(memo_.counters().verifications, 1u);
  EXPECT_EQ(memo_.counters().ecdh, 1u);
  ASSERT_TRUE(Shared(b_, a_.identity.certificate_der, a_.id, &ba).ok());
  // b checked a's certificate (never seen before) but reused the pair.
  EXPECT_EQ(memo_.counters().verifications, 2u);
  EXPECT_EQ(memo_.counters().ecdh, 1u);
  ASSERT_TRUE(Shared(c_, b_.identity.certificate_der, b_.id, &ac).ok());
  // b's certificate is known; the pair (4, 5) is new.
  EXPECT_EQ(memo_.counters().verifications, 2u);
  EXPECT_EQ(memo_.counters().ecdh, 2u);
  EXPECT_EQ(memo_.counters().derivations, 3u);
  EXPECT_TRUE(SameKeys(ab, Direct(a_, b_)));
  EXPECT_TRUE(SameKeys(ba, Direct(b_, a_)));
  EXPECT_TRUE(SameKeys(ab, ba));
  EXPECT_TRUE(SameKeys(ac, Direct(c_, b_)));
  EXPECT_FALSE(SameKeys(ab, ac));
}

TEST_F(SharedPairKeysTest, UnseenBytesAreCheckedAndErrorsPassThrough) {
  seal::PairKeys keys;
  ASSERT_TRUE(Shared(a_, b_.identity.certificate_der, b_.id, &keys).ok());
  // The same device id with different bytes (a tampered signature) is
  // checked again and refused, as VerifyPeerCertificate would.
  std::vector<uint8_t> tampered = b_.identity.certificate_der;
  tampered[tampered.size() - 5] ^= 0x40;
  seal::PairKeys refused;
  const Status direct = seal::VerifyAndDerivePairKeys(c_.credentials, tampered, c_.id, b_.id, &crypto::DrbgRandom,
                                                      &c_.drbg, &refused);
  EXPECT_FALSE(direct.ok());
  EXPECT_EQ(Shared(c_, tampered, b_.id, &refused), direct);
  EXPECT_FALSE(refused.valid);
  // A verified certificate presented for another id is refused too.
  EXPECT_EQ(Shared(c_, b_.identity.certificate_der, a_.id, &refused), Status::Unauthenticated());
  EXPECT_EQ(memo_.counters().failures, 2u);
  EXPECT_EQ(memo_.counters().verifications, 3u);
}

class SharedJobKeysTest : public SharedPairKeysTest {
 protected:
  static constexpr uint64_t kJob = 41;
  SharedJobKeysTest() {
    ab_ = Direct(a_, b_);
    ba_ = Direct(b_, a_);
    EXPECT_TRUE(a_key_.Generate(kJob, salt_, &crypto::DrbgRandom, &a_.drbg).ok());
    EXPECT_TRUE(b_key_.Generate(kJob, salt_, &crypto::DrbgRandom, &b_.drbg).ok());
  }
  seal::PairKeys DirectJob(const seal::PairKeys& pair, const seal::JobKeyPair& own, Device& device,
                           ConstByteSpan peer_key) {
    seal::PairKeys keys;
    EXPECT_TRUE(seal::DeriveJobKeys(pair, own, device.id, peer_key, &crypto::DrbgRandom, &device.drbg, &keys).ok());
    return keys;
  }
  Status SharedJob(const seal::PairKeys& pair, const seal::JobKeyPair& own, Device& device, ConstByteSpan peer_key,
                   seal::PairKeys* out) {
    const seal::PairKeySource source = memo_.source();
    return source.DeriveJob(pair, own, device.id, peer_key, &crypto::DrbgRandom, &device.drbg, out);
  }

  const std::vector<uint8_t> salt_ = std::vector<uint8_t>(16, 0x5a);
  seal::PairKeys ab_, ba_;
  seal::JobKeyPair a_key_, b_key_;
};

TEST_F(SharedJobKeysTest, TheSecondSideOfAPairTakesTheFirstSidesJobKeys) {
  seal::PairKeys ab, ba;
  ASSERT_TRUE(SharedJob(ab_, a_key_, a_, b_key_.public_key(), &ab).ok());
  ASSERT_TRUE(SharedJob(ba_, b_key_, b_, a_key_.public_key(), &ba).ok());
  EXPECT_EQ(memo_.counters().job_derivations, 2u);
  EXPECT_EQ(memo_.counters().job_ecdh, 1u);
  EXPECT_TRUE(SameKeys(ab, DirectJob(ab_, a_key_, a_, b_key_.public_key())));
  EXPECT_TRUE(SameKeys(ba, DirectJob(ba_, b_key_, b_, a_key_.public_key())));
  EXPECT_TRUE(SameKeys(ab, ba));
  EXPECT_FALSE(SameKeys(ab, ab_));
  // The entry went with its second use: a third derivation computes again.
  seal::PairKeys again;
  ASSERT_TRUE(SharedJob(ab_, a_key_, a_, b_key_.public_key(), &again).ok());
  EXPECT_EQ(memo_.counters().job_ecdh, 2u);
  EXPECT_TRUE(SameKeys(again, ab));
}

TEST_F(SharedJobKeysTest, AnythingThatDiffersIsDerivedAlone) {
  seal::PairKeys ab;
  ASSERT_TRUE(SharedJob(ab_, a_key_, a_, b_key_.public_key(), &ab).ok());
  // b was handed another key for a (a restarted a, or a substitution): not a's entry.
  seal::JobKeyPair other;
  ASSERT_TRUE(other.Generate(kJob, salt_, &crypto::DrbgRandom, &c_.drbg).ok());
  seal::PairKeys ba_other;
  ASSERT_TRUE(SharedJob(ba_, b_key_, b_, other.public_key(), &ba_other).ok());
  EXPECT_EQ(memo_.counters().job_ecdh, 2u);
  EXPECT_TRUE(SameKeys(ba_other, DirectJob(ba_, b_key_, b_, other.public_key())));
  EXPECT_FALSE(SameKeys(ba_other, ab));
  // The same job id with another salt: derived alone.
  seal::JobKeyPair a_next, b_next;
  ASSERT_TRUE(a_next.Generate(kJob + 1, salt_, &crypto::DrbgRandom, &a_.drbg).ok());
  ASSERT_TRUE(SharedJob(ab_, a_next, a_, b_key_.public_key(), &ab).ok());
  const std::vector<uint8_t> other_salt(16, 0x33);
  ASSERT_TRUE(b_next.Generate(kJob + 1, other_salt, &crypto::DrbgRandom, &b_.drbg).ok());
  seal::PairKeys ba_next;
  ASSERT_TRUE(SharedJob(ba_, b_next, b_, a_next.public_key(), &ba_next).ok());
  EXPECT_EQ(memo_.counters().job_ecdh, 4u);
  EXPECT_TRUE(SameKeys(ba_next, DirectJob(ba_, b_next, b_, a_next.public_key())));
  // Pair keys that differ from the entry's are not matched either.
  ASSERT_TRUE(SharedJob(ab_, a_key_, a_, b_key_.public_key(), &ab).ok());
  seal::PairKeys tampered = ba_;
  tampered.low_to_high[0] ^= 1;
  seal::PairKeys ba_tampered;
  ASSERT_TRUE(SharedJob(tampered, b_key_, b_, a_key_.public_key(), &ba_tampered).ok());
  EXPECT_EQ(memo_.counters().job_ecdh, 6u);
  EXPECT_TRUE(SameKeys(ba_tampered, DirectJob(tampered, b_key_, b_, a_key_.public_key())));
  EXPECT_FALSE(SameKeys(ba_tampered, ab));
}

TEST_F(SharedJobKeysTest, ErrorsPassThroughUnchanged) {
  seal::PairKeys out;
  const std::vector<uint8_t> short_key(33, 4);
  EXPECT_EQ(SharedJob(ab_, a_key_, a_, short_key, &out), Status::Unauthenticated());
  std::vector<uint8_t> off_curve(b_key_.public_key().begin(), b_key_.public_key().end());
  off_curve[40] ^= 0x01;
  EXPECT_EQ(SharedJob(ab_, a_key_, a_, off_curve, &out), Status::Unauthenticated());
  EXPECT_EQ(SharedJob(ab_, a_key_, c_, b_key_.public_key(), &out), Status::InvalidArgument());
  seal::JobKeyPair none;
  EXPECT_EQ(SharedJob(ab_, none, a_, b_key_.public_key(), &out), Status::InvalidArgument());
  EXPECT_FALSE(out.valid);
  EXPECT_EQ(memo_.counters().job_failures, 4u);
}

}  // namespace
}  // namespace nodefl::emulator
