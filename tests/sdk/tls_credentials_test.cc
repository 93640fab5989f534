// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Loading credentials, the device identity syntax and the MbedTLS error
// mapping.
#include "nodefl/tls/credentials.h"

#include <gtest/gtest.h>
#include <mbedtls/error.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>

#include <cstring>
#include <string>
#include <vector>

#include "nodefl/tls/device_identity.h"
#include "nodefl/tls/errors.h"
#include "nodefl/protocol/limits.h"
#include "test_pki.h"

namespace nodefl::tls {
namespace {

using testing::TestIdentity;
using testing::TestPki;

ConstByteSpan Bytes(const std::string& text) {
  return ConstByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

ConstByteSpan BytesWithNul(const std::string& text) {
  return ConstByteSpan(reinterpret_cast<const uint8_t*>(text.c_str()), text.size() + 1);
}

class TlsCredentialsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki(3);
    device_ = new TestIdentity(pki_->Device(42));
  }
  static void TearDownTestSuite() {
    delete device_;
    delete pki_;
  }
  static TestPki* pki_;
  static TestIdentity* device_;
};

TestPki* TlsCredentialsTest::pki_ = nullptr;
TestIdentity* TlsCredentialsTest::device_ = nullptr;

TEST_F(TlsCredentialsTest, LoadsPemWithOrWithoutNulAndDer) {
  TlsCredentials credentials;
  EXPECT_FALSE(credentials.has_ca_chain());
  EXPECT_TRUE(credentials.LoadCaChain(Bytes(pki_->ca_pem())).ok());
  EXPECT_TRUE(credentials.has_ca_chain());
  EXPECT_TRUE(credentials.LoadCaChain(BytesWithNul(pki_->ca_pem())).ok());
  EXPECT_TRUE(credentials.LoadCaChain(pki_->ca_der()).ok());

  EXPECT_TRUE(credentials.LoadOwnIdentity(Bytes(device_->certificate_pem),
                                          Bytes(device_->private_key_pem))
                  .ok());
  EXPECT_TRUE(credentials.has_own_identity());
  EXPECT_TRUE(credentials.LoadOwnIdentity(device_->certificate_der, device_->private_key_der).ok());
  EXPECT_TRUE(IsP256Key(*credentials.own_key()));
  const Result<uint32_t> id = DeviceIdFromCertificate(*credentials.own_certificate());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 42u);
}

TEST_F(TlsCredentialsTest, DeviceCertificateFitsThePeerCertificateMessage) {
  EXPECT_LE(device_->certificate_der.size(), protocol::kMaxCertificateDerBytes);
  const TestIdentity largest = pki_->Device(4294967295u);
  EXPECT_LE(largest.certificate_der.size(), protocol::kMaxCertificateDerBytes);
}

TEST_F(TlsCredentialsTest, RejectsBadInputAndLeavesNothingBehind) {
  TlsCredentials credentials;
  EXPECT_EQ(credentials.LoadCaChain({}), Status::InvalidArgument());
  const std::string garbage = "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  EXPECT_EQ(credentials.LoadCaChain(Bytes(garbage)), Status::InvalidArgument());
  std::vector<uint8_t> truncated(pki_->ca_der().begin(), pki_->ca_der().end() - 10);
  EXPECT_EQ(credentials.LoadCaChain(truncated), Status::InvalidArgument());
  EXPECT_FALSE(credentials.has_ca_chain());
  // A leaf is not a trust anchor.
  EXPECT_EQ(credentials.LoadCaChain(device_->certificate_der), Status::InvalidArgument());
  EXPECT_FALSE(credentials.has_ca_chain());

  // A key that does not belong to the certificate.
  const TestIdentity other = pki_->Device(43);
  EXPECT_EQ(credentials.LoadOwnIdentity(device_->certificate_der, other.private_key_der),
            Status::InvalidArgument());
  EXPECT_FALSE(credentials.has_own_identity());
  EXPECT_EQ(credentials.LoadOwnIdentity(device_->certificate_der, {}), Status::InvalidArgument());
  std::vector<uint8_t> bad_key = device_->private_key_der;
  bad_key[bad_key.size() / 2] ^= 0xFF;
  EXPECT_FALSE(credentials.LoadOwnIdentity(device_->certificate_der, bad_key).ok());
  EXPECT_FALSE(credentials.has_own_identity());
  // A failed load clears a previous good one.
  ASSERT_TRUE(credentials.LoadOwnIdentity(device_->certificate_der, device_->private_key_der).ok());
  EXPECT_FALSE(credentials.LoadOwnIdentity(device_->certificate_der, other.private_key_der).ok());
  EXPECT_FALSE(credentials.has_own_identity());
}

TEST_F(TlsCredentialsTest, LongPemNeedsItsNul) {
  // Several certificates in one PEM text, longer than the stack copy.
  std::string chain;
  while (chain.size() <= kMaxPemCopyBytes) chain += pki_->ca_pem();
  TlsCredentials credentials;
  EXPECT_EQ(credentials.LoadCaChain(Bytes(chain)), Status::ResourceExhausted());
  EXPECT_TRUE(credentials.LoadCaChain(BytesWithNul(chain)).ok());
}

TEST_F(TlsCredentialsTest, SharedCaChain) {
  TlsCredentials owner;
  ASSERT_TRUE(pki_->LoadTrust(&owner).ok());
  TlsCredentials user;
  EXPECT_EQ(user.ShareCaChain(user), Status::InvalidArgument());
  TlsCredentials empty;
  EXPECT_EQ(user.ShareCaChain(empty), Status::InvalidArgument());
  ASSERT_TRUE(user.ShareCaChain(owner).ok());
  EXPECT_EQ(user.ca_chain(), owner.ca_chain());
}

TEST(DeviceIdentityTest, ParsesOnlyCanonicalDeviceNames) {
  auto parse = [](const char* text) {
    return DeviceIdFromCommonName(Span<const char>(text, std::strlen(text)));
  };
  EXPECT_EQ(parse("device-0").value(), 0u);
  EXPECT_EQ(parse("device-7").value(), 7u);
  EXPECT_EQ(parse("device-4294967295").value(), 4294967295u);
  for (const char* bad : {"device-4294967296", "device-99999999999", "device-007", "device-00",
                          "device-", "device", "Device-7", "device-7 ", " device-7", "device--7",
                          "device-+7", "device-7a", "node-7", ""}) {
    EXPECT_EQ(parse(bad).status(), Status::Unauthenticated()) << bad;
  }
}

TEST(DeviceIdentityTest, FormatsWhatItParses) {
  char text[kMaxDeviceCommonNameBytes];
  for (const uint32_t id : {0u, 7u, 10u, 123456u, 4294967295u}) {
    const Result<size_t> length = FormatDeviceCommonName(id, text);
    ASSERT_TRUE(length.ok());
    EXPECT_EQ(text[*length], '\0');
    EXPECT_EQ(DeviceIdFromCommonName(Span<const char>(text, *length)).value(), id);
  }
  char small[8];
  EXPECT_EQ(FormatDeviceCommonName(12, small).status(), Status::ResourceExhausted());
}

TEST(TlsErrorsTest, MapsMbedtlsCodesToStatus) {
  EXPECT_TRUE(StatusFromMbedtls(0).ok());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_X509_CERT_VERIFY_FAILED), Status::Unauthenticated());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE), Status::Unauthenticated());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_INVALID_MAC), Status::DataLoss());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_INVALID_RECORD), Status::DataLoss());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE), Status::Aborted());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY), Status::Aborted());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_NO_USABLE_CIPHERSUITE), Status::FailedPrecondition());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_ALLOC_FAILED), Status::ResourceExhausted());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_X509_INVALID_FORMAT + MBEDTLS_ERR_ASN1_OUT_OF_DATA),
            Status::InvalidArgument());
  EXPECT_EQ(StatusFromMbedtls(MBEDTLS_ERR_SSL_WANT_READ), Status::Unavailable());
  EXPECT_STREQ(DescribeMbedtlsError(MBEDTLS_ERR_SSL_INVALID_MAC), "record failed its integrity check");
  EXPECT_NE(DescribeMbedtlsError(-0x7FFF), nullptr);
}

}  // namespace
}  // namespace nodefl::tls
