// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// End-to-end sealing between devices: certificate checks, pair keys,
// seal/open and replay protection.
#include "nodefl/seal/seal.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/peer_certificate.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/tls/credentials.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::seal {
namespace {

using testing::TestIdentity;
using testing::TestPki;

// A device as the seal module sees it (its credentials and a DRBG), and
// the pair keys it derives with a peer.
struct Device : testing::DeviceCredentials {
  using DeviceCredentials::DeviceCredentials;

  // Verifies `peer`'s certificate and derives the pair keys with it.
  PairKeys KeysWith(const Device& peer) {
    PeerPublicKey key;
    EXPECT_TRUE(VerifyPeerCertificate(credentials, peer.identity.certificate_der, peer.id, &key).ok());
    PairKeys keys;
    EXPECT_TRUE(DerivePairKeys(credentials, key, id, peer.id, &crypto::DrbgRandom, &drbg, &keys).ok());
    return keys;
  }
};

std::vector<uint8_t> Text(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

class SealTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki(5);
    a_ = new Device(*pki_, 7);
    b_ = new Device(*pki_, 8);
    c_ = new Device(*pki_, 9);
    ab_ = new PairKeys(a_->KeysWith(*b_));
    ba_ = new PairKeys(b_->KeysWith(*a_));
  }
  static void TearDownTestSuite() {
    delete ba_;
    delete ab_;
    delete c_;
    delete b_;
    delete a_;
    delete pki_;
  }

  // Seals `plaintext` from 7 to 8 in job 5 with `counter`.
  static std::vector<uint8_t> SealAtoB(const std::vector<uint8_t>& plaintext, uint64_t counter,
                                       uint64_t job_id = 5) {
    std::vector<uint8_t> sealed(plaintext.size() + kSealOverheadBytes);
    const Result<size_t> n = Seal(*ab_, SealHeader{7, 8, job_id, counter}, plaintext, sealed);
    EXPECT_TRUE(n.ok());
    EXPECT_EQ(n.value_or(0), sealed.size());
    return sealed;
  }

  static TestPki* pki_;
  static Device* a_;
  static Device* b_;
  static Device* c_;
  static PairKeys* ab_;  // derived by 7
  static PairKeys* ba_;  // derived by 8
};

TestPki* SealTest::pki_ = nullptr;
Device* SealTest::a_ = nullptr;
Device* SealTest::b_ = nullptr;
Device* SealTest::c_ = nullptr;
PairKeys* SealTest::ab_ = nullptr;
PairKeys* SealTest::ba_ = nullptr;

TEST_F(SealTest, BothSidesDeriveTheSameDirectionKeys) {
  ASSERT_TRUE(ab_->valid && ba_->valid);
  EXPECT_EQ(ab_->low_id, 7u);
  EXPECT_EQ(ab_->high_id, 8u);
  EXPECT_EQ(ba_->low_id, 7u);
  EXPECT_EQ(ba_->high_id, 8u);
  EXPECT_EQ(0, std::memcmp(ab_->low_to_high, ba_->low_to_high, kSealKeyBytes));
  EXPECT_EQ(0, std::memcmp(ab_->high_to_low, ba_->high_to_low, kSealKeyBytes));
  EXPECT_NE(0, std::memcmp(ab_->low_to_high, ab_->high_to_low, kSealKeyBytes));
  // Another pair gets other keys.
  const PairKeys ac = a_->KeysWith(*c_);
  EXPECT_NE(0, std::memcmp(ab_->low_to_high, ac.low_to_high, kSealKeyBytes));
}

TEST_F(SealTest, RoundTripsBothWays) {
  const std::vector<uint8_t> message = Text("walk step 3: visit node 8");
  const std::vector<uint8_t> sealed = SealAtoB(message, 1);
  ASSERT_EQ(sealed.size(), message.size() + 32);
  // The key id, then the counter travel in clear at the front.
  EXPECT_EQ(0, std::memcmp(sealed.data(), ab_->low_to_high_id, kSealKeyIdBytes));
  EXPECT_EQ(sealed[kSealKeyIdBytes + 7], 1);
  EXPECT_EQ(0, std::memcmp(sealed.data() + kSealKeyIdBytes, "\0\0\0\0\0\0\0", 7));
  EXPECT_EQ(std::string(sealed.begin() + 16, sealed.end() - 16).find("walk"), std::string::npos);

  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  const Result<size_t> n = Open(*ba_, 7, 8, 5, sealed, opened, &counter);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, message.size());
  EXPECT_EQ(opened, message);
  EXPECT_EQ(counter, 1u);

  // And back, under the other direction key.
  const std::vector<uint8_t> reply = Text("ack");
  std::vector<uint8_t> sealed_reply(reply.size() + kSealOverheadBytes);
  ASSERT_TRUE(Seal(*ba_, SealHeader{8, 7, 5, 1}, reply, sealed_reply).ok());
  std::vector<uint8_t> opened_reply(reply.size());
  ASSERT_TRUE(Open(*ab_, 8, 7, 5, sealed_reply, opened_reply, &counter).ok());
  EXPECT_EQ(opened_reply, reply);
  // Same counter, other direction: different ciphertext (different key).
  const std::vector<uint8_t> same_counter = SealAtoB(reply, 1);
  EXPECT_NE(same_counter, sealed_reply);
}

TEST_F(SealTest, EmptyAndMaximalPlaintexts) {
  const std::vector<uint8_t> empty;
  const std::vector<uint8_t> sealed = SealAtoB(empty, 2);
  EXPECT_EQ(sealed.size(), kSealOverheadBytes);
  uint8_t none[1];
  uint64_t counter = 0;
  EXPECT_EQ(Open(*ba_, 7, 8, 5, sealed, ByteSpan(none, 0), &counter).value(), 0u);

  static_assert(kMaxSealPlaintextBytes == 4096 - 32, "matches the wire bound");
  const std::vector<uint8_t> largest(kMaxSealPlaintextBytes, 0xAB);
  const std::vector<uint8_t> big_sealed = SealAtoB(largest, 3);
  EXPECT_EQ(big_sealed.size(), kMaxSealedBytes);
  std::vector<uint8_t> opened(largest.size());
  EXPECT_TRUE(Open(*ba_, 7, 8, 5, big_sealed, opened, &counter).ok());
  EXPECT_EQ(opened, largest);

  std::vector<uint8_t> too_large(kMaxSealPlaintextBytes + 1);
  std::vector<uint8_t> out(too_large.size() + kSealOverheadBytes);
  EXPECT_EQ(Seal(*ab_, SealHeader{7, 8, 5, 4}, too_large, out).status(), Status::OutOfRange());
}

TEST_F(SealTest, EverySingleBitFlipIsRejected) {
  const std::vector<uint8_t> message = Text("degree bin 4");
  const std::vector<uint8_t> sealed = SealAtoB(message, 9);
  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  for (size_t bit = 0; bit < sealed.size() * 8; ++bit) {
    std::vector<uint8_t> tampered = sealed;
    tampered[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    std::fill(opened.begin(), opened.end(), 0x55);
    EXPECT_EQ(Open(*ba_, 7, 8, 5, tampered, opened, &counter).status(), Status::Unauthenticated())
        << "bit " << bit;
    // Nothing of the forgery is released.
    EXPECT_EQ(opened, std::vector<uint8_t>(message.size(), 0)) << "bit " << bit;
  }
  // Truncations and extensions too.
  for (size_t length = 0; length < sealed.size(); ++length) {
    EXPECT_EQ(Open(*ba_, 7, 8, 5, ConstByteSpan(sealed.data(), length), opened, &counter).status(),
              Status::Unauthenticated());
  }
  std::vector<uint8_t> longer = sealed;
  longer.push_back(0);
  std::vector<uint8_t> roomy(longer.size());
  EXPECT_EQ(Open(*ba_, 7, 8, 5, longer, roomy, &counter).status(), Status::Unauthenticated());
}

TEST_F(SealTest, WrongSenderReceiverOrJobIsRejected) {
  const std::vector<uint8_t> message = Text("embedding row");
  const std::vector<uint8_t> sealed = SealAtoB(message, 11);
  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  // Replayed into another job.
  EXPECT_EQ(Open(*ba_, 7, 8, 6, sealed, opened, &counter).status(), Status::Unauthenticated());
  // Reflected back to its sender as if 8 had sent it.
  EXPECT_EQ(Open(*ab_, 8, 7, 5, sealed, opened, &counter).status(), Status::Unauthenticated());
  // Claimed to come from 9: 8 opens with its keys for 9, which do not fit.
  const PairKeys cb = b_->KeysWith(*c_);
  EXPECT_EQ(Open(cb, 9, 8, 5, sealed, opened, &counter).status(), Status::Unauthenticated());
  // Keys of another pair for this (src, dst) are a caller error.
  EXPECT_EQ(Open(cb, 7, 8, 5, sealed, opened, &counter).status(), Status::InvalidArgument());
  std::vector<uint8_t> out(message.size() + kSealOverheadBytes);
  EXPECT_EQ(Seal(cb, SealHeader{7, 8, 5, 12}, message, out).status(), Status::InvalidArgument());
  // The genuine one still opens.
  EXPECT_TRUE(Open(*ba_, 7, 8, 5, sealed, opened, &counter).ok());
}

TEST_F(SealTest, BadArgumentsAreStatuses) {
  const std::vector<uint8_t> message = Text("x");
  std::vector<uint8_t> out(message.size() + kSealOverheadBytes);
  EXPECT_EQ(Seal(*ab_, SealHeader{7, 8, 5, 0}, message, out).status(), Status::InvalidArgument());
  std::vector<uint8_t> small(message.size() + kSealOverheadBytes - 1);
  EXPECT_EQ(Seal(*ab_, SealHeader{7, 8, 5, 1}, message, small).status(), Status::ResourceExhausted());
  EXPECT_EQ(Seal(PairKeys(), SealHeader{7, 8, 5, 1}, message, out).status(), Status::InvalidArgument());
  // Sealing in place is refused rather than corrupting.
  EXPECT_EQ(Seal(*ab_, SealHeader{7, 8, 5, 1}, ConstByteSpan(out.data(), 1), out).status(),
            Status::InvalidArgument());

  const std::vector<uint8_t> sealed = SealAtoB(message, 1);
  uint64_t counter = 0;
  uint8_t none[1];
  EXPECT_EQ(Open(*ba_, 7, 8, 5, sealed, ByteSpan(none, 0), &counter).status(),
            Status::ResourceExhausted());
  std::vector<uint8_t> opened(1);
  EXPECT_EQ(Open(*ba_, 7, 8, 5, sealed, opened, nullptr).status(), Status::InvalidArgument());
  // A counter of 0 was never sealed, even with a valid-looking tag.
  std::vector<uint8_t> zero_counter = sealed;
  std::memset(zero_counter.data(), 0, 8);
  EXPECT_EQ(Open(*ba_, 7, 8, 5, zero_counter, opened, &counter).status(), Status::Unauthenticated());
}

TEST_F(SealTest, ReplayWindowRejectsDuplicatesAndOldCounters) {
  ReplayWindow window;
  EXPECT_EQ(window.Accept(0), Status::InvalidArgument());
  EXPECT_TRUE(window.Accept(1).ok());
  EXPECT_EQ(window.Accept(1), Status::AlreadyExists());
  EXPECT_TRUE(window.Accept(5).ok());
  EXPECT_EQ(window.Accept(3), Status::AlreadyExists());
  EXPECT_EQ(window.highest(), 5u);
  ReplayWindow resumed(window.highest());
  EXPECT_EQ(resumed.Accept(5), Status::AlreadyExists());
  EXPECT_TRUE(resumed.Accept(6).ok());

  // The full receive path: open, then accept; a replayed payload opens
  // (it is genuine) but the window refuses it.
  const std::vector<uint8_t> message = Text("once");
  const std::vector<uint8_t> sealed = SealAtoB(message, 21);
  ReplayWindow from_7;
  std::vector<uint8_t> opened(message.size());
  for (int delivery = 0; delivery < 2; ++delivery) {
    uint64_t counter = 0;
    ASSERT_TRUE(Open(*ba_, 7, 8, 5, sealed, opened, &counter).ok());
    EXPECT_EQ(from_7.Accept(counter), delivery == 0 ? Status::Ok() : Status::AlreadyExists());
  }
}

TEST_F(SealTest, PeerCertificateMustNameTheExpectedDevice) {
  PeerPublicKey key;
  ASSERT_TRUE(VerifyPeerCertificate(a_->credentials, b_->identity.certificate_der, 8, &key).ok());
  EXPECT_TRUE(key.valid);
  EXPECT_EQ(key.device_id, 8u);
  EXPECT_EQ(key.point[0], 0x04);  // uncompressed point

  // Device 7's certificate presented as device 8's.
  PeerPublicKey untouched;
  EXPECT_EQ(VerifyPeerCertificate(b_->credentials, a_->identity.certificate_der, 8, &untouched),
            Status::Unauthenticated());
  EXPECT_FALSE(untouched.valid);
}

TEST_F(SealTest, PeerCertificateMustComeFromTheDeploymentCa) {
  TestPki rogue(77, "rogue CA");
  const TestIdentity forged = rogue.Device(8);
  PeerPublicKey key;
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, forged.certificate_der, 8, &key),
            Status::Unauthenticated());
  EXPECT_FALSE(key.valid);
  // Neither the CA itself nor the server certificate is a peer device.
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, pki_->ca_der(), 8, &key),
            Status::Unauthenticated());
  const TestIdentity server = pki_->Server("device-8");
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, server.certificate_der, 8, &key),
            Status::Unauthenticated());
  // Expired.
  pki::Validity expired;
  expired.not_after = pki::UnixNow() - 3600;
  expired.not_before = expired.not_after - 86400;
  const TestIdentity old = pki_->Leaf(pki::LeafKind::kDevice, "device-8", "", expired);
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, old.certificate_der, 8, &key),
            Status::Unauthenticated());
}

TEST_F(SealTest, MalformedPeerCertificatesAreInvalidArguments) {
  PeerPublicKey key;
  std::vector<uint8_t> der = b_->identity.certificate_der;
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, {}, 8, &key), Status::InvalidArgument());
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, ConstByteSpan(der.data(), der.size() - 1), 8, &key),
            Status::InvalidArgument());
  der.push_back(0);
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, der, 8, &key), Status::InvalidArgument());
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, b_->identity.certificate_der, 8, nullptr),
            Status::InvalidArgument());
  tls::TlsCredentials no_trust;
  EXPECT_EQ(VerifyPeerCertificate(no_trust, b_->identity.certificate_der, 8, &key),
            Status::FailedPrecondition());
  // A flipped signature bit is a forgery, not a parse error.
  std::vector<uint8_t> forged = b_->identity.certificate_der;
  forged[forged.size() - 5] ^= 0x01;
  EXPECT_EQ(VerifyPeerCertificate(a_->credentials, forged, 8, &key), Status::Unauthenticated());
}

TEST_F(SealTest, DerivationChecksItsInputs) {
  PeerPublicKey key8;
  ASSERT_TRUE(VerifyPeerCertificate(a_->credentials, b_->identity.certificate_der, 8, &key8).ok());
  PairKeys keys;
  Drbg& rng = a_->drbg;
  // Own id must match the own certificate; peer id the verified key.
  EXPECT_EQ(DerivePairKeys(a_->credentials, key8, 9, 8, &crypto::DrbgRandom, &rng, &keys),
            Status::InvalidArgument());
  EXPECT_EQ(DerivePairKeys(a_->credentials, key8, 7, 9, &crypto::DrbgRandom, &rng, &keys),
            Status::InvalidArgument());
  EXPECT_EQ(DerivePairKeys(a_->credentials, PeerPublicKey(), 7, 0, &crypto::DrbgRandom, &rng, &keys),
            Status::InvalidArgument());
  EXPECT_EQ(DerivePairKeys(a_->credentials, key8, 7, 8, nullptr, nullptr, &keys),
            Status::InvalidArgument());
  tls::TlsCredentials trust_only;
  ASSERT_TRUE(pki_->LoadTrust(&trust_only).ok());
  EXPECT_EQ(DerivePairKeys(trust_only, key8, 7, 8, &crypto::DrbgRandom, &rng, &keys),
            Status::FailedPrecondition());
  // A point off the curve.
  PeerPublicKey off_curve = key8;
  off_curve.point[40] ^= 0x01;
  EXPECT_EQ(DerivePairKeys(a_->credentials, off_curve, 7, 8, &crypto::DrbgRandom, &rng, &keys),
            Status::Unauthenticated());
  EXPECT_FALSE(keys.valid);
  ASSERT_TRUE(DerivePairKeys(a_->credentials, key8, 7, 8, &crypto::DrbgRandom, &rng, &keys).ok());
  keys.Wipe();
  EXPECT_FALSE(keys.valid);
  EXPECT_EQ(keys.low_to_high[0] | keys.low_to_high[31] | keys.high_to_low[0], 0);
}

// Both devices of a pair draw an ephemeral key for the job; each derives
// the job keys from its own ephemeral key and the other's public one.
// Each instance draws from streams of its own (a device's RNG, seeded
// from entropy in production, never repeats its draws; deterministic
// streams keep the test reproducible).
struct JobPair {
  JobPair(uint64_t job_id, const std::vector<uint8_t>& salt) {
    static uint64_t instances = 0;
    ++instances;
    EXPECT_TRUE(rng_a.SeedDeterministic(0xA, instances).ok());
    EXPECT_TRUE(rng_b.SeedDeterministic(0xB, instances).ok());
    EXPECT_TRUE(a_key.Generate(job_id, salt, &crypto::DrbgRandom, &rng_a).ok());
    EXPECT_TRUE(b_key.Generate(job_id, salt, &crypto::DrbgRandom, &rng_b).ok());
  }
  Drbg rng_a, rng_b;
  JobKeyPair a_key, b_key;
};

TEST_F(SealTest, JobKeysAgreeAndDifferFromThePairKeys) {
  const std::vector<uint8_t> salt(16, 0x5A);
  JobPair job(42, salt);
  ASSERT_TRUE(job.a_key.valid());
  EXPECT_EQ(job.a_key.public_key().size(), kJobPublicKeyBytes);
  EXPECT_EQ(job.a_key.public_key()[0], 0x04);  // uncompressed point
  EXPECT_EQ(job.a_key.job_id(), 42u);
  PairKeys job_ab;
  PairKeys job_ba;
  ASSERT_TRUE(DeriveJobKeys(*ab_, job.a_key, 7, job.b_key.public_key(), &crypto::DrbgRandom, &job.rng_a, &job_ab).ok());
  ASSERT_TRUE(DeriveJobKeys(*ba_, job.b_key, 8, job.a_key.public_key(), &crypto::DrbgRandom, &job.rng_b, &job_ba).ok());
  EXPECT_EQ(job_ab.low_id, 7u);
  EXPECT_EQ(job_ab.high_id, 8u);
  EXPECT_EQ(0, std::memcmp(job_ab.low_to_high, job_ba.low_to_high, kSealKeyBytes));
  EXPECT_EQ(0, std::memcmp(job_ab.high_to_low, job_ba.high_to_low, kSealKeyBytes));
  EXPECT_EQ(0, std::memcmp(job_ab.low_to_high_id, job_ba.low_to_high_id, kSealKeyIdBytes));
  EXPECT_NE(0, std::memcmp(job_ab.low_to_high, ab_->low_to_high, kSealKeyBytes));
  EXPECT_NE(0, std::memcmp(job_ab.low_to_high, job_ab.high_to_low, kSealKeyBytes));

  // Sealed under the job's keys, it opens only with them.
  const std::vector<uint8_t> message = Text("job 42");
  std::vector<uint8_t> sealed(message.size() + kSealOverheadBytes);
  ASSERT_TRUE(Seal(job_ab, SealHeader{7, 8, 42, 1}, message, sealed).ok());
  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  EXPECT_TRUE(Open(job_ba, 7, 8, 42, sealed, opened, &counter).ok());
  EXPECT_EQ(opened, message);
  EXPECT_EQ(Open(*ba_, 7, 8, 42, sealed, opened, &counter).status(), Status::Unauthenticated());
}

TEST_F(SealTest, NewEphemeralKeysMakeNewJobKeysWhateverTheServerRepeats) {
  // The server repeats job id and salt (a rerun with a fixed seed, or a
  // replayed JobStart): every start of the job still gets new keys, so a
  // counter restarting at 1 never meets a key it was used under.
  const std::vector<uint8_t> salt(16, 0x11);
  JobPair first(1, salt);
  JobPair again(1, salt);
  EXPECT_NE(0, std::memcmp(first.a_key.public_key().data(), again.a_key.public_key().data(), kJobPublicKeyBytes));
  PairKeys k1, k2;
  ASSERT_TRUE(DeriveJobKeys(*ab_, first.a_key, 7, first.b_key.public_key(), &crypto::DrbgRandom, &first.rng_a, &k1).ok());
  ASSERT_TRUE(DeriveJobKeys(*ab_, again.a_key, 7, again.b_key.public_key(), &crypto::DrbgRandom, &again.rng_a, &k2).ok());
  EXPECT_NE(0, std::memcmp(k1.low_to_high, k2.low_to_high, kSealKeyBytes));
  EXPECT_NE(0, std::memcmp(k1.low_to_high_id, k2.low_to_high_id, kSealKeyIdBytes));
  // Only the sender restarted (b kept its key): still new keys.
  PairKeys k3;
  ASSERT_TRUE(DeriveJobKeys(*ab_, again.a_key, 7, first.b_key.public_key(), &crypto::DrbgRandom, &again.rng_a, &k3).ok());
  EXPECT_NE(0, std::memcmp(k1.low_to_high, k3.low_to_high, kSealKeyBytes));
  // Only the receiver restarted: what was sealed for its old key does not
  // open under the new one (no replay into the new run).
  const std::vector<uint8_t> message = Text("counter 1");
  std::vector<uint8_t> old_run(message.size() + kSealOverheadBytes);
  ASSERT_TRUE(Seal(k1, SealHeader{7, 8, 1, 1}, message, old_run).ok());
  PairKeys b_new;
  ASSERT_TRUE(DeriveJobKeys(*ba_, again.b_key, 8, first.a_key.public_key(), &crypto::DrbgRandom, &again.rng_b, &b_new).ok());
  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  EXPECT_EQ(Open(b_new, 7, 8, 1, old_run, opened, &counter).status(), Status::Unauthenticated());
}

TEST_F(SealTest, ASubstitutedJobKeyGivesKeysThatOpenNothing) {
  // The server hands b an ephemeral key that is not a's (its own, or c's):
  // a and b then hold different keys; nothing a seals opens at b.
  const std::vector<uint8_t> salt(16, 0x22);
  JobPair job(9, salt);
  JobPair intruder(9, salt);
  PairKeys a_view, b_view;
  ASSERT_TRUE(DeriveJobKeys(*ab_, job.a_key, 7, job.b_key.public_key(), &crypto::DrbgRandom, &job.rng_a, &a_view).ok());
  ASSERT_TRUE(
      DeriveJobKeys(*ba_, job.b_key, 8, intruder.a_key.public_key(), &crypto::DrbgRandom, &job.rng_b, &b_view).ok());
  const std::vector<uint8_t> message = Text("for b only");
  std::vector<uint8_t> sealed(message.size() + kSealOverheadBytes);
  ASSERT_TRUE(Seal(a_view, SealHeader{7, 8, 9, 1}, message, sealed).ok());
  std::vector<uint8_t> opened(message.size());
  uint64_t counter = 0;
  EXPECT_EQ(Open(b_view, 7, 8, 9, sealed, opened, &counter).status(), Status::Unauthenticated());
  // The intruder, holding its ephemeral private key but not the static pair
  // keys, derives with c's pair keys at best: different keys again.
  PairKeys c_keys = c_->KeysWith(*b_);
  PairKeys intruder_view;
  ASSERT_TRUE(DeriveJobKeys(c_keys, intruder.a_key, 9, job.b_key.public_key(), &crypto::DrbgRandom, &intruder.rng_a,
                            &intruder_view)
                  .ok());
  EXPECT_NE(0, std::memcmp(intruder_view.low_to_high, b_view.low_to_high, kSealKeyBytes));
}

TEST_F(SealTest, JobKeyInputsAreChecked) {
  const std::vector<uint8_t> salt(16, 0x33);
  JobPair job(5, salt);
  PairKeys out;
  // A point off the curve, a wrong size, nothing at all.
  std::vector<uint8_t> bad(job.b_key.public_key().begin(), job.b_key.public_key().end());
  bad[64] ^= 1;
  EXPECT_EQ(DeriveJobKeys(*ab_, job.a_key, 7, bad, &crypto::DrbgRandom, &job.rng_a, &out), Status::Unauthenticated());
  EXPECT_EQ(DeriveJobKeys(*ab_, job.a_key, 7, ConstByteSpan(bad).first(33), &crypto::DrbgRandom, &job.rng_a, &out),
            Status::Unauthenticated());
  EXPECT_EQ(DeriveJobKeys(*ab_, job.a_key, 7, ConstByteSpan(), &crypto::DrbgRandom, &job.rng_a, &out),
            Status::Unauthenticated());
  EXPECT_FALSE(out.valid);
  // Not one of the pair, no own key, no pair keys, no RNG.
  EXPECT_EQ(DeriveJobKeys(*ab_, job.a_key, 9, job.b_key.public_key(), &crypto::DrbgRandom, &job.rng_a, &out),
            Status::InvalidArgument());
  JobKeyPair none;
  EXPECT_EQ(DeriveJobKeys(*ab_, none, 7, job.b_key.public_key(), &crypto::DrbgRandom, &job.rng_a, &out),
            Status::InvalidArgument());
  EXPECT_EQ(DeriveJobKeys(PairKeys(), job.a_key, 7, job.b_key.public_key(), &crypto::DrbgRandom, &job.rng_a, &out),
            Status::InvalidArgument());
  EXPECT_EQ(DeriveJobKeys(*ab_, job.a_key, 7, job.b_key.public_key(), nullptr, nullptr, &out),
            Status::InvalidArgument());
  // Salts out of range.
  JobKeyPair k;
  const std::vector<uint8_t> short_salt(kMinJobSaltBytes - 1, 1), long_salt(kMaxJobSaltBytes + 1, 1),
      longest_salt(kMaxJobSaltBytes, 1);
  EXPECT_EQ(k.Generate(5, short_salt, &crypto::DrbgRandom, &job.rng_a), Status::InvalidArgument());
  EXPECT_EQ(k.Generate(5, long_salt, &crypto::DrbgRandom, &job.rng_a), Status::InvalidArgument());
  EXPECT_FALSE(k.valid());
  EXPECT_TRUE(k.public_key().empty());
  ASSERT_TRUE(k.Generate(5, longest_salt, &crypto::DrbgRandom, &job.rng_a).ok());
  k.Wipe();
  EXPECT_FALSE(k.valid());
}

TEST_F(SealTest, SealedPayloadsNameTheirKey) {
  const std::vector<uint8_t> message = Text("which key?");
  const std::vector<uint8_t> sealed = SealAtoB(message, 77);
  uint8_t key_id[kSealKeyIdBytes];
  uint64_t counter = 0;
  ASSERT_TRUE(PeekSealed(sealed, key_id, &counter));
  EXPECT_EQ(counter, 77u);
  EXPECT_EQ(0, std::memcmp(key_id, ab_->low_to_high_id, kSealKeyIdBytes));
  EXPECT_NE(0, std::memcmp(ab_->low_to_high_id, ab_->high_to_low_id, kSealKeyIdBytes));
  EXPECT_FALSE(PeekSealed(ConstByteSpan(sealed).first(15), key_id, &counter));
  // Another key id in front of a genuine payload: refused.
  std::vector<uint8_t> renamed = sealed;
  std::memcpy(renamed.data(), ab_->high_to_low_id, kSealKeyIdBytes);
  std::vector<uint8_t> opened(message.size());
  EXPECT_EQ(Open(*ba_, 7, 8, 5, renamed, opened, &counter).status(), Status::Unauthenticated());
}

}  // namespace
}  // namespace nodefl::seal
