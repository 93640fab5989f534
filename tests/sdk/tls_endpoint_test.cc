// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsEndpoint end to end: two endpoints (a device and the server) talk
// through memory, with credentials made in-process by TestPki.
#include "nodefl/tls/endpoint.h"

#include <gtest/gtest.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "test_pki.h"

namespace nodefl::tls {
namespace {

using testing::TestIdentity;
using testing::TestPki;

// One side of a connection: credentials, config, buffers, endpoint.
struct Party {
  Party(TestPki& pki, const TestIdentity& identity, TlsRole role, const char* server_name,
        uint64_t seed, size_t buffer_bytes = kTlsRecommendedBufferBytes)
      : inbound(buffer_bytes), outbound(buffer_bytes) {
    EXPECT_TRUE(drbg.SeedDeterministic(seed).ok());
    EXPECT_TRUE(pki.Load(identity, &credentials).ok());
    EXPECT_TRUE(config.Init(role, credentials, &crypto::DrbgRandom, &drbg).ok());
    EXPECT_TRUE(endpoint.Init(config, inbound, outbound, server_name).ok());
  }

  Drbg drbg;
  TlsCredentials credentials;
  TlsConfig config;
  std::vector<uint8_t> inbound;
  std::vector<uint8_t> outbound;
  TlsEndpoint endpoint;
};

// Moves pending ciphertext from `from` into `to` as far as `to` takes it.
// Returns the number of bytes moved.
size_t Transfer(TlsEndpoint& from, TlsEndpoint& to) {
  const ConstByteSpan pending = from.PendingCiphertext();
  size_t consumed = 0;
  EXPECT_TRUE(to.FeedCiphertext(pending, &consumed).ok());
  from.ConsumeCiphertext(consumed);
  return consumed;
}

struct HandshakeOutcome {
  Status client = Status::Unknown();
  Status server = Status::Unknown();
};

// Drives both handshakes until both are done or one has failed (then lets
// the failure's alert reach the other side).
HandshakeOutcome RunHandshake(TlsEndpoint& client, TlsEndpoint& server) {
  HandshakeOutcome outcome;
  for (int round = 0; round < 200; ++round) {
    const Result<TlsProgress> c = client.Handshake();
    const Result<TlsProgress> s = server.Handshake();
    outcome.client = c.status();
    outcome.server = s.status();
    const size_t moved = Transfer(client, server) + Transfer(server, client);
    const bool client_done = c.ok() && *c == TlsProgress::kDone;
    const bool server_done = s.ok() && *s == TlsProgress::kDone;
    if (client_done && server_done) return outcome;
    if ((!c.ok() || !s.ok()) && moved == 0 && round > 0) {
      // One side failed; give the other one more turn to read the alert.
      outcome.client = client.Handshake().status();
      outcome.server = server.Handshake().status();
      return outcome;
    }
  }
  ADD_FAILURE() << "handshake did not converge";
  return outcome;
}

// Sends all of `data` from `from` to `to`, reading it there, through
// whatever buffer sizes the endpoints have.
std::vector<uint8_t> SendAll(TlsEndpoint& from, TlsEndpoint& to, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> received;
  size_t sent = 0;
  uint8_t chunk[1024];
  for (int round = 0; round < 100000 && received.size() < data.size(); ++round) {
    if (sent < data.size()) {
      const Result<size_t> n =
          from.WritePlaintext(ConstByteSpan(data.data() + sent, data.size() - sent));
      EXPECT_TRUE(n.ok());
      if (!n.ok()) break;
      sent += *n;
    }
    Transfer(from, to);
    for (;;) {
      const Result<size_t> got = to.ReadPlaintext(chunk);
      EXPECT_TRUE(got.ok());
      if (!got.ok() || *got == 0) break;
      received.insert(received.end(), chunk, chunk + *got);
    }
  }
  return received;
}

std::vector<uint8_t> Pattern(size_t size) {
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  return data;
}

class TlsEndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki(1);
    server_identity_ = new TestIdentity(pki_->Server("localhost"));
    device7_ = new TestIdentity(pki_->Device(7));
  }
  static void TearDownTestSuite() {
    delete device7_;
    delete server_identity_;
    delete pki_;
  }

  static TestPki* pki_;
  static TestIdentity* server_identity_;
  static TestIdentity* device7_;
};

TestPki* TlsEndpointTest::pki_ = nullptr;
TestIdentity* TlsEndpointTest::server_identity_ = nullptr;
TestIdentity* TlsEndpointTest::device7_ = nullptr;

TEST_F(TlsEndpointTest, HandshakeBindsTheDeviceIdAndCarriesDataBothWays) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 1);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 2);
  EXPECT_EQ(server.endpoint.PeerDeviceId().status(), Status::FailedPrecondition());

  const HandshakeOutcome outcome = RunHandshake(device.endpoint, server.endpoint);
  ASSERT_TRUE(outcome.client.ok()) << device.endpoint.last_error_text();
  ASSERT_TRUE(outcome.server.ok()) << server.endpoint.last_error_text();
  EXPECT_TRUE(device.endpoint.handshake_done());
  EXPECT_TRUE(server.endpoint.handshake_done());

  const Result<uint32_t> id = server.endpoint.PeerDeviceId();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 7u);
  // The device's peer is the server, which names no device.
  EXPECT_EQ(device.endpoint.PeerDeviceId().status(), Status::Unauthenticated());
  EXPECT_EQ(server.endpoint.verify_flags(), 0u);
  const std::string suite = device.endpoint.ciphersuite();
  EXPECT_NE(suite.find("ECDHE-ECDSA"), std::string::npos) << suite;
  EXPECT_NE(suite.find("GCM"), std::string::npos) << suite;

  const std::vector<uint8_t> hello = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(SendAll(device.endpoint, server.endpoint, hello), hello);
  // More than one record's worth from the server.
  const std::vector<uint8_t> big = Pattern(40000);
  EXPECT_EQ(SendAll(server.endpoint, device.endpoint, big), big);
}

TEST_F(TlsEndpointTest, TinyBuffersStillWork) {
  // MbedTLS resumes partial reads and writes, so buffers far below one
  // record only cost pump rounds.
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 3, 211);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 4, 97);
  const HandshakeOutcome outcome = RunHandshake(device.endpoint, server.endpoint);
  ASSERT_TRUE(outcome.client.ok() && outcome.server.ok())
      << device.endpoint.last_error_text() << " / " << server.endpoint.last_error_text();
  const std::vector<uint8_t> data = Pattern(5000);
  EXPECT_EQ(SendAll(device.endpoint, server.endpoint, data), data);
  EXPECT_EQ(SendAll(server.endpoint, device.endpoint, data), data);
  // A full outbound buffer accepts nothing rather than failing.
  size_t accepted = 0;
  for (int i = 0; i < 10; ++i) {
    const Result<size_t> n = device.endpoint.WritePlaintext(data);
    ASSERT_TRUE(n.ok());
    accepted += *n;
  }
  EXPECT_LE(accepted, 97u);
  EXPECT_EQ(device.endpoint.WritePlaintext(data).value(), 0u);
}

TEST_F(TlsEndpointTest, ServerRefusesADeviceCertifiedByAnotherCa) {
  TestPki rogue(99, "rogue CA");
  const TestIdentity impostor = rogue.Device(7);
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 5);
  // The impostor trusts our CA (so it accepts the server) but its own
  // certificate comes from the rogue CA.
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 6);
  TlsCredentials rogue_credentials;
  ASSERT_TRUE(rogue_credentials.LoadCaChain(pki_->ca_der()).ok());
  ASSERT_TRUE(rogue_credentials.LoadOwnIdentity(impostor.certificate_der, impostor.private_key_der).ok());
  TlsConfig rogue_config;
  ASSERT_TRUE(rogue_config.Init(TlsRole::kClient, rogue_credentials, &crypto::DrbgRandom, &device.drbg).ok());
  std::vector<uint8_t> in(kTlsRecommendedBufferBytes), out(kTlsRecommendedBufferBytes);
  TlsEndpoint client;
  ASSERT_TRUE(client.Init(rogue_config, in, out, "localhost").ok());

  const HandshakeOutcome outcome = RunHandshake(client, server.endpoint);
  EXPECT_EQ(outcome.server, Status::Unauthenticated());
  EXPECT_EQ(server.endpoint.last_mbedtls_error(), MBEDTLS_ERR_X509_CERT_VERIFY_FAILED);
  EXPECT_NE(server.endpoint.verify_flags() & MBEDTLS_X509_BADCERT_NOT_TRUSTED, 0u);
  EXPECT_STREQ(server.endpoint.last_error_text(), "certificate verification failed");
  // The server's alert reaches the client.
  EXPECT_EQ(outcome.client, Status::Aborted());
  EXPECT_FALSE(server.endpoint.handshake_done());
  EXPECT_EQ(server.endpoint.PeerDeviceId().status(), Status::FailedPrecondition());
  // Errors are sticky.
  EXPECT_EQ(server.endpoint.Handshake().status(), Status::Unauthenticated());
  EXPECT_EQ(server.endpoint.WritePlaintext(in).status(), Status::Unauthenticated());
}

// A bare MbedTLS client without any certificate, which the TlsConfig API
// cannot build (it always authenticates).
struct CertificatelessClient {
  CertificatelessClient() {
    mbedtls_ssl_config_init(&config);
    mbedtls_ssl_init(&ssl);
    EXPECT_TRUE(drbg.SeedDeterministic(77).ok());
    EXPECT_EQ(mbedtls_ssl_config_defaults(&config, MBEDTLS_SSL_IS_CLIENT,
                                          MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT),
              0);
    mbedtls_ssl_conf_authmode(&config, MBEDTLS_SSL_VERIFY_NONE);
    mbedtls_ssl_conf_rng(&config, &crypto::DrbgRandom, &drbg);
    EXPECT_EQ(mbedtls_ssl_setup(&ssl, &config), 0);
    mbedtls_ssl_set_bio(&ssl, this, &Send, &Receive, nullptr);
  }
  ~CertificatelessClient() {
    mbedtls_ssl_free(&ssl);
    mbedtls_ssl_config_free(&config);
  }
  static int Send(void* self, const unsigned char* data, size_t length) {
    auto* client = static_cast<CertificatelessClient*>(self);
    client->to_server.insert(client->to_server.end(), data, data + length);
    return static_cast<int>(length);
  }
  static int Receive(void* self, unsigned char* out, size_t length) {
    auto* client = static_cast<CertificatelessClient*>(self);
    if (client->from_server.empty()) return MBEDTLS_ERR_SSL_WANT_READ;
    const size_t take = std::min(length, client->from_server.size());
    std::memcpy(out, client->from_server.data(), take);
    client->from_server.erase(client->from_server.begin(), client->from_server.begin() + take);
    return static_cast<int>(take);
  }

  Drbg drbg;
  mbedtls_ssl_config config;
  mbedtls_ssl_context ssl;
  std::vector<uint8_t> to_server;
  std::vector<uint8_t> from_server;
};

TEST_F(TlsEndpointTest, ServerRefusesAClientWithoutCertificate) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 7);
  CertificatelessClient client;
  Status server_status;
  int client_rc = 0;
  for (int round = 0; round < 100; ++round) {
    client_rc = mbedtls_ssl_handshake(&client.ssl);
    size_t consumed = 0;
    ASSERT_TRUE(server.endpoint.FeedCiphertext(client.to_server, &consumed).ok());
    client.to_server.erase(client.to_server.begin(), client.to_server.begin() + consumed);
    server_status = server.endpoint.Handshake().status();
    const ConstByteSpan pending = server.endpoint.PendingCiphertext();
    client.from_server.insert(client.from_server.end(), pending.begin(), pending.end());
    server.endpoint.ConsumeCiphertext(pending.size());
    if (!server_status.ok()) break;
  }
  EXPECT_EQ(server_status, Status::Unauthenticated());
  EXPECT_EQ(server.endpoint.last_mbedtls_error(), MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE);
  EXPECT_FALSE(server.endpoint.handshake_done());
  // MbedTLS 2.28 sends no alert in this case; the client simply never gets
  // the server's Finished (the server closes the socket).
  client_rc = mbedtls_ssl_handshake(&client.ssl);
  EXPECT_NE(client_rc, 0);
}

TEST_F(TlsEndpointTest, DeviceRefusesAServerCertificateForAnotherName) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 8);
  Party device(*pki_, *device7_, TlsRole::kClient, "nodefl.example.org", 9);
  const HandshakeOutcome outcome = RunHandshake(device.endpoint, server.endpoint);
  EXPECT_EQ(outcome.client, Status::Unauthenticated());
  EXPECT_NE(device.endpoint.verify_flags() & MBEDTLS_X509_BADCERT_CN_MISMATCH, 0u);
  EXPECT_FALSE(outcome.server.ok());
}

TEST_F(TlsEndpointTest, DeviceRefusesAServerCertifiedByAnotherCa) {
  TestPki rogue(98, "rogue CA");
  Party server(rogue, rogue.Server("localhost"), TlsRole::kServer, nullptr, 10);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 11);
  const HandshakeOutcome outcome = RunHandshake(device.endpoint, server.endpoint);
  EXPECT_EQ(outcome.client, Status::Unauthenticated());
  EXPECT_NE(device.endpoint.verify_flags() & MBEDTLS_X509_BADCERT_NOT_TRUSTED, 0u);
  EXPECT_FALSE(device.endpoint.handshake_done());
}

TEST_F(TlsEndpointTest, CertificatesOnlyServeTheirRole) {
  // A device certificate cannot act as the server, even under its own
  // name: its extended key usage is clientAuth only (MbedTLS refuses to
  // serve with it, so the handshake fails on the server's side first).
  {
    const TestIdentity device9 = pki_->Device(9);
    Party fake_server(*pki_, device9, TlsRole::kServer, nullptr, 12);
    Party device(*pki_, *device7_, TlsRole::kClient, "device-9", 13);
    const HandshakeOutcome outcome = RunHandshake(device.endpoint, fake_server.endpoint);
    EXPECT_FALSE(outcome.client.ok());
    EXPECT_FALSE(outcome.server.ok());
    EXPECT_FALSE(device.endpoint.handshake_done());
  }
  // And the server certificate cannot log in as a device.
  {
    Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 14);
    Party fake_device(*pki_, *server_identity_, TlsRole::kClient, "localhost", 15);
    EXPECT_EQ(RunHandshake(fake_device.endpoint, server.endpoint).server,
              Status::Unauthenticated());
  }
}

TEST_F(TlsEndpointTest, ServerRefusesAnExpiredDeviceCertificate) {
  pki::Validity expired;
  expired.not_after = pki::UnixNow() - 86400;
  expired.not_before = expired.not_after - 30 * 86400;
  const TestIdentity old = pki_->Leaf(pki::LeafKind::kDevice, "device-7", "", expired);
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 16);
  Party device(*pki_, old, TlsRole::kClient, "localhost", 17);
  EXPECT_EQ(RunHandshake(device.endpoint, server.endpoint).server, Status::Unauthenticated());
  EXPECT_NE(server.endpoint.verify_flags() & MBEDTLS_X509_BADCERT_EXPIRED, 0u);
}

TEST_F(TlsEndpointTest, CommonNameThatIsNotADeviceIdGivesNoIdentity) {
  for (const char* name : {"node-7", "device-007", "device-x", "device-", "device-4294967296"}) {
    SCOPED_TRACE(name);
    const TestIdentity odd = pki_->Leaf(pki::LeafKind::kDevice, name, "", TestPki::DefaultValidity());
    Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 18);
    Party device(*pki_, odd, TlsRole::kClient, "localhost", 19);
    const HandshakeOutcome outcome = RunHandshake(device.endpoint, server.endpoint);
    // The certificate is genuine, so TLS succeeds; the identity does not.
    ASSERT_TRUE(outcome.server.ok() && outcome.client.ok());
    EXPECT_EQ(server.endpoint.PeerDeviceId().status(), Status::Unauthenticated());
  }
}

TEST_F(TlsEndpointTest, CorruptedRecordIsDataLossAndSticky) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 20);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 21);
  ASSERT_TRUE(RunHandshake(device.endpoint, server.endpoint).server.ok());

  const std::vector<uint8_t> message = Pattern(300);
  ASSERT_EQ(device.endpoint.WritePlaintext(message).value(), message.size());
  std::vector<uint8_t> record(device.endpoint.PendingCiphertext().begin(),
                              device.endpoint.PendingCiphertext().end());
  device.endpoint.ConsumeCiphertext(record.size());
  ASSERT_EQ(record.size(), message.size() + kTlsRecordOverheadBytes);
  record[record.size() / 2] ^= 0x01;  // inside the encrypted payload
  size_t consumed = 0;
  ASSERT_TRUE(server.endpoint.FeedCiphertext(record, &consumed).ok());
  uint8_t out[512];
  EXPECT_EQ(server.endpoint.ReadPlaintext(out).status(), Status::DataLoss());
  EXPECT_EQ(server.endpoint.last_mbedtls_error(), MBEDTLS_ERR_SSL_INVALID_MAC);
  EXPECT_EQ(server.endpoint.ReadPlaintext(out).status(), Status::DataLoss());
  EXPECT_EQ(server.endpoint.status(), Status::DataLoss());
}

TEST_F(TlsEndpointTest, GarbageInsteadOfAHandshakeFailsCleanly) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 22);
  Drbg noise;
  ASSERT_TRUE(noise.SeedDeterministic(5).ok());
  for (int attempt = 0; attempt < 20; ++attempt) {
    ASSERT_TRUE(server.endpoint.Reset().ok());
    std::vector<uint8_t> garbage(64 + attempt * 37);
    ASSERT_TRUE(noise.Fill(garbage).ok());
    if (attempt % 2 == 1) {
      // A plausible record header with a nonsense body.
      garbage[0] = 22;
      garbage[1] = 3;
      garbage[2] = 3;
    }
    size_t consumed = 0;
    ASSERT_TRUE(server.endpoint.FeedCiphertext(garbage, &consumed).ok());
    const Result<TlsProgress> progress = server.endpoint.Handshake();
    // Either an error or a wait for more bytes (a header claiming a long
    // record); never a completed handshake.
    if (progress.ok()) {
      EXPECT_NE(*progress, TlsProgress::kDone);
    } else {
      EXPECT_NE(server.endpoint.last_mbedtls_error(), 0);
    }
  }
}

TEST_F(TlsEndpointTest, CloseNotifyReachesThePeer) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 23);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 24);
  ASSERT_TRUE(RunHandshake(device.endpoint, server.endpoint).server.ok());
  ASSERT_TRUE(device.endpoint.CloseNotify().ok());
  const std::vector<uint8_t> late = Pattern(4);
  EXPECT_EQ(device.endpoint.WritePlaintext(late).status(), Status::FailedPrecondition());
  Transfer(device.endpoint, server.endpoint);
  uint8_t out[16];
  EXPECT_EQ(server.endpoint.ReadPlaintext(out).status(), Status::Aborted());
  EXPECT_TRUE(server.endpoint.peer_closed());
  EXPECT_FALSE(device.endpoint.peer_closed());
}

TEST_F(TlsEndpointTest, ResetServesANewConnectionAndKeepsTheServerName) {
  Party server(*pki_, *server_identity_, TlsRole::kServer, nullptr, 25);
  Party device(*pki_, *device7_, TlsRole::kClient, "localhost", 26);
  ASSERT_TRUE(RunHandshake(device.endpoint, server.endpoint).server.ok());
  ASSERT_TRUE(device.endpoint.Reset().ok());
  ASSERT_TRUE(server.endpoint.Reset().ok());
  EXPECT_FALSE(server.endpoint.handshake_done());
  const HandshakeOutcome again = RunHandshake(device.endpoint, server.endpoint);
  ASSERT_TRUE(again.client.ok() && again.server.ok());
  EXPECT_EQ(server.endpoint.PeerDeviceId().value(), 7u);

  // The expected server name survives a reset: still refused afterwards.
  Party picky(*pki_, *device7_, TlsRole::kClient, "other.example.org", 27);
  ASSERT_TRUE(server.endpoint.Reset().ok());
  EXPECT_EQ(RunHandshake(picky.endpoint, server.endpoint).client, Status::Unauthenticated());
  ASSERT_TRUE(picky.endpoint.Reset().ok());
  ASSERT_TRUE(server.endpoint.Reset().ok());
  EXPECT_EQ(RunHandshake(picky.endpoint, server.endpoint).client, Status::Unauthenticated());
}

TEST_F(TlsEndpointTest, MisuseIsReportedNotCrashed) {
  TlsCredentials empty;
  TlsConfig config;
  Drbg drbg;
  ASSERT_TRUE(drbg.SeedDeterministic(1).ok());
  EXPECT_EQ(config.Init(TlsRole::kClient, empty, &crypto::DrbgRandom, &drbg), Status::FailedPrecondition());
  TlsCredentials trust_only;
  ASSERT_TRUE(pki_->LoadTrust(&trust_only).ok());
  EXPECT_EQ(config.Init(TlsRole::kClient, trust_only, &crypto::DrbgRandom, &drbg),
            Status::FailedPrecondition());
  TlsCredentials full;
  ASSERT_TRUE(pki_->Load(*device7_, &full).ok());
  EXPECT_EQ(config.Init(TlsRole::kClient, full, nullptr, nullptr), Status::InvalidArgument());

  std::vector<uint8_t> in(512), out(512);
  TlsEndpoint endpoint;
  EXPECT_EQ(endpoint.Init(config, in, out, "localhost"), Status::FailedPrecondition());  // not ready
  ASSERT_TRUE(config.Init(TlsRole::kClient, full, &crypto::DrbgRandom, &drbg).ok());
  EXPECT_EQ(config.Init(TlsRole::kClient, full, &crypto::DrbgRandom, &drbg), Status::FailedPrecondition());
  EXPECT_EQ(endpoint.Init(config, in, out, nullptr), Status::InvalidArgument());
  EXPECT_EQ(endpoint.Init(config, in, out, ""), Status::InvalidArgument());
  EXPECT_EQ(endpoint.Init(config, in, ByteSpan(in.data() + 10, 10), "localhost"),
            Status::InvalidArgument());
  EXPECT_EQ(endpoint.Init(config, in, ByteSpan(), "localhost"), Status::InvalidArgument());
  size_t consumed = 0;
  EXPECT_EQ(endpoint.FeedCiphertext(in, &consumed), Status::FailedPrecondition());
  EXPECT_TRUE(endpoint.PendingCiphertext().empty());
  ASSERT_TRUE(endpoint.Init(config, in, out, "localhost").ok());
  EXPECT_EQ(endpoint.Init(config, in, out, "localhost"), Status::FailedPrecondition());
  EXPECT_EQ(endpoint.WritePlaintext(in).status(), Status::FailedPrecondition());
  uint8_t buffer[8];
  EXPECT_EQ(endpoint.ReadPlaintext(buffer).status(), Status::FailedPrecondition());
  EXPECT_EQ(endpoint.PeerDeviceId().status(), Status::FailedPrecondition());

  TlsConfig server_config;
  ASSERT_TRUE(server_config.Init(TlsRole::kServer, full, &crypto::DrbgRandom, &drbg).ok());
  TlsEndpoint server;
  EXPECT_EQ(server.Init(server_config, in, out, "localhost"), Status::InvalidArgument());
}

// The server shares one TlsConfig (and one credentials object) across all
// connections and threads, with a locked CTR_DRBG as its random source.
TEST_F(TlsEndpointTest, OneServerConfigServesConnectionsOnSeveralThreads) {
  mbedtls_ctr_drbg_context server_drbg;
  mbedtls_ctr_drbg_init(&server_drbg);
  Drbg seed_source;
  ASSERT_TRUE(seed_source.SeedDeterministic(31).ok());
  ASSERT_EQ(mbedtls_ctr_drbg_seed(&server_drbg, &crypto::DrbgRandom, &seed_source, nullptr, 0), 0);
  TlsCredentials server_credentials;
  ASSERT_TRUE(pki_->Load(*server_identity_, &server_credentials).ok());
  TlsConfig server_config;
  ASSERT_TRUE(server_config
                  .Init(TlsRole::kServer, server_credentials, &mbedtls_ctr_drbg_random, &server_drbg)
                  .ok());
  std::vector<std::unique_ptr<TestIdentity>> devices;
  for (uint32_t id = 100; id < 104; ++id) devices.push_back(std::make_unique<TestIdentity>(pki_->Device(id)));

  std::vector<int> successes(devices.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < devices.size(); ++t) {
    threads.emplace_back([&, t] {
      Party device(*pki_, *devices[t], TlsRole::kClient, "localhost", 40 + t);
      std::vector<uint8_t> in(kTlsRecommendedBufferBytes), out(kTlsRecommendedBufferBytes);
      TlsEndpoint server;
      if (!server.Init(server_config, in, out, nullptr).ok()) return;
      for (int round = 0; round < 2; ++round) {
        if (!server.Reset().ok() || !device.endpoint.Reset().ok()) return;
        const HandshakeOutcome outcome = RunHandshake(device.endpoint, server);
        const Result<uint32_t> id = server.PeerDeviceId();
        if (outcome.server.ok() && id.ok() && *id == 100 + t) ++successes[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < devices.size(); ++t) EXPECT_EQ(successes[t], 2) << "thread " << t;
  mbedtls_ctr_drbg_free(&server_drbg);
}

}  // namespace
}  // namespace nodefl::tls
