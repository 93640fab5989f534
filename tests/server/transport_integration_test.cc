// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Integration and negative tests of the server and devices over real TLS on
// 127.0.0.1: the neighbour-echo job on the karate graph with 34 emulated SDK
// devices, refused credentials and identities, end-to-end sealing across the
// relay, the server's answer to every kind of malformed input, and resume.
//
// The negative tests share one server (TransportTest): each test uses its own
// device ids and finds its log lines by the client's TCP port, so tests do
// not see each other, and the shared server also shows that one connection's
// violation leaves the others alone across many refusals.
#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "nodefl/server/jobs/neighbour_echo_kind.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/emulator/emulated_device.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/peer_certificate.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/seal/seal.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// ---- frames built by hand ------------------------------------------------------

// A length prefix around `payload`, whatever it holds.
std::vector<uint8_t> RawFrame(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(protocol::kFrameHeaderBytes + payload.size());
  protocol::WriteFrameLength(static_cast<uint32_t>(payload.size()), ByteSpan(frame));
  std::copy(payload.begin(), payload.end(), frame.begin() + protocol::kFrameHeaderBytes);
  return frame;
}

void AppendVarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// An envelope (version 1, `seq`) whose only other field is number
// `field_number`, length-delimited: a body a newer protocol version might
// send, which this version does not know.
std::vector<uint8_t> EnvelopeWithUnknownField(uint32_t field_number, uint64_t seq) {
  std::vector<uint8_t> p;
  AppendVarint(p, (1u << 3) | 0);  // version
  AppendVarint(p, protocol::kProtocolVersion);
  AppendVarint(p, (2u << 3) | 0);  // seq
  AppendVarint(p, seq);
  AppendVarint(p, (uint64_t{field_number} << 3) | 2);
  const char body[] = "from the future";
  AppendVarint(p, sizeof(body) - 1);
  p.insert(p.end(), body, body + sizeof(body) - 1);
  return p;
}

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

std::vector<uint8_t> BytesOf(const auto& field) {
  const ConstByteSpan s = protocol::BytesOf(field);
  return {s.begin(), s.end()};
}

// ---- assertions on what a client saw ---------------------------------------------

// The server answered with Error{code} (naming `offending_seq`), sent nothing
// after it and closed the connection.
void ExpectRefused(RawClient& c, StatusCode code, uint64_t offending_seq) {
  std::unique_ptr<nodefl_wire_Envelope> e = c.Next();
  ASSERT_NE(e, nullptr) << "the connection ended without an Error frame";
  ASSERT_EQ(e->which_body, nodefl_wire_Envelope_error_tag) << "got " << protocol::BodyName(e->which_body);
  EXPECT_EQ(e->body.error.code, static_cast<uint32_t>(code))
      << "got " << StatusCodeName(static_cast<StatusCode>(e->body.error.code)) << ": " << e->body.error.message;
  EXPECT_EQ(e->body.error.offending_seq, offending_seq);
  EXPECT_GT(std::strlen(e->body.error.message), 0u) << "an Error should say why";
  EXPECT_TRUE(c.WaitClosed()) << "the server kept the connection open after its Error";
  EXPECT_EQ(c.queued(), 0u) << "the server sent something after its Error";
  EXPECT_EQ(c.bad_frames(), 0u);
}

// A Heartbeat comes back echoed: the connection is alive and served.
void ExpectHeartbeatEcho(RawClient& c, uint64_t stamp) {
  auto hb = NewEnvelope(nodefl_wire_Envelope_heartbeat_tag);
  hb->body.heartbeat.sent_at_us = stamp;
  ASSERT_TRUE(c.Send(*hb).ok());
  std::unique_ptr<nodefl_wire_Envelope> echo = c.Next();
  ASSERT_NE(echo, nullptr) << "no answer to a Heartbeat";
  ASSERT_EQ(echo->which_body, nodefl_wire_Envelope_heartbeat_tag) << "got " << protocol::BodyName(echo->which_body);
  EXPECT_EQ(echo->body.heartbeat.sent_at_us, stamp);
  EXPECT_FALSE(c.closed());
}

// ---- fixture: one shared server for the negative tests ----------------------------

// Ids 0..9 are named by individual tests; the rest are handed out fresh.
constexpr uint32_t kFirstPooledId = 100;
constexpr uint32_t kPooledIds = 150;

class TransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<uint32_t> ids(10);
    std::iota(ids.begin(), ids.end(), 0u);
    for (uint32_t i = 0; i < kPooledIds; ++i) ids.push_back(kFirstPooledId + i);
    deployment_ = new TestDeployment(ids, /*seed=*/11);
    if (!deployment_->ok()) {
      setup_error_ = deployment_->error();
      return;
    }
    const server::ServerConfig config = deployment_->BaseConfig();
    if (const server::ConfigStatus valid = server::ValidateConfig(config); !valid.ok) {
      setup_error_ = "config: " + valid.message;
      return;
    }
    hello_timeout_ms_ = config.hello_timeout_ms;
    server_ = new ServerUnderTest(config, deployment_->dir() / "server.log");
    if (!server_->ok()) setup_error_ = "server: " + server_->error();
  }

  static void TearDownTestSuite() {
    if (server_ != nullptr && server_->ok()) {
      // A server that served every refusal above still shuts down cleanly.
      const std::optional<int> status = server_->StopAndWait(milliseconds(10000));
      EXPECT_EQ(status, std::optional<int>(0)) << "Server::Run() did not return 0 after Stop()";
    }
    delete server_;
    server_ = nullptr;
    delete deployment_;
    deployment_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    ASSERT_TRUE(server_->running()) << "the shared server is gone (an earlier test stopped or broke it)";
  }

  void TearDown() override {
    if (HasFailure() && server_ != nullptr) {
      const std::string log = server_->LogText();
      const size_t from = log.size() > 6000 ? log.find('\n', log.size() - 6000) + 1 : 0;
      std::fprintf(stderr, "---- server log (tail) ----\n%s---- end ----\n", log.c_str() + from);
    }
  }

  static uint32_t FreshId() {
    static uint32_t next = 0;
    return kFirstPooledId + (next++ % kPooledIds);
  }

  // Credentials of a device the deployment issued (cached per test).
  ClientCredentials& CredentialsFor(uint32_t id) {
    auto& slot = credentials_[id];
    if (!slot) {
      std::string error;
      slot = MakeClientCredentials(deployment_->pki().ca_der(), deployment_->device(id), 1000 + id, &error);
      if (!slot) {
        ADD_FAILURE() << error;
        std::abort();  // a broken test set-up, not an outcome
      }
    }
    return *slot;
  }

  // Connected (TLS done) as device `id`; nullptr after reporting a failure.
  std::unique_ptr<RawClient> Connected(uint32_t id) {
    auto c = std::make_unique<RawClient>(io_, CredentialsFor(id));
    const Status st = c->Connect(server_->port());
    if (!st.ok()) {
      ADD_FAILURE() << "device " << id << ": TLS connection failed: " << st.str();
      return nullptr;
    }
    return c;
  }

  // Connected and registered (fresh session) as device `id`.
  std::unique_ptr<RawClient> Registered(uint32_t id) {
    std::unique_ptr<RawClient> c = Connected(id);
    if (!c) return nullptr;
    const std::optional<nodefl_wire_Welcome> welcome = c->Register(id);
    if (!welcome) {
      ADD_FAILURE() << "device " << id << ": no Welcome";
      return nullptr;
    }
    EXPECT_FALSE(welcome->resumed);
    EXPECT_EQ(welcome->resume_token.size, protocol::kMaxResumeTokenBytes);
    return c;
  }

  // `bystander` (registered as `bystander_id`) is still served: its
  // heartbeat is answered and a relay message from a device that connects
  // now reaches it intact.
  void ExpectBystanderServed(RawClient& bystander, uint32_t bystander_id) {
    ASSERT_FALSE(bystander.closed()) << "the well-behaved device lost its connection";
    ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(bystander, 0xb7574d));
    const uint32_t sender_id = FreshId();
    std::unique_ptr<RawClient> sender = Registered(sender_id);
    ASSERT_NE(sender, nullptr);
    const std::vector<uint8_t> payload = Bytes("still relayed after a neighbour misbehaved");
    auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag);
    send->body.relay_send.dst = bystander_id;
    ASSERT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(payload)).ok());
    ASSERT_TRUE(sender->Send(*send).ok());
    std::unique_ptr<nodefl_wire_Envelope> got = bystander.Next();
    ASSERT_NE(got, nullptr) << "the relay message never reached the well-behaved device";
    ASSERT_EQ(got->which_body, nodefl_wire_Envelope_relay_deliver_tag) << protocol::BodyName(got->which_body);
    EXPECT_EQ(got->body.relay_deliver.src, sender_id);
    EXPECT_EQ(BytesOf(got->body.relay_deliver.sealed), payload);
    auto ack = NewEnvelope(nodefl_wire_Envelope_relay_ack_tag);
    ack->body.relay_ack.relay_id = got->body.relay_deliver.relay_id;
    ASSERT_TRUE(bystander.Send(*ack).ok());
    EXPECT_EQ(bystander.bad_frames(), 0u);
  }

  // Waits for a log line naming this client's connection.
  bool Logged(std::string_view event, const RawClient& c, std::vector<std::string> fields = {}) {
    fields.push_back(c.peer_field());
    return server_->WaitForLog(event, fields, milliseconds(3000));
  }
  // Closes device `id`'s client `old`, waits until the server saw it go,
  // and connects it again asking to resume with `token`: the new client,
  // resumed, whose Welcome says the server holds its sends up to
  // `last_send_id` (nullptr, with a failure recorded, otherwise).
  std::unique_ptr<RawClient> Resumed(RawClient& old, uint32_t id, const std::vector<uint8_t>& token,
                                     uint64_t last_send_id) {
    old.Close();
    if (!Logged("disconnected", old, {"device=" + std::to_string(id)})) {
      ADD_FAILURE() << "device " << id << ": the server did not see its connection end";
      return nullptr;
    }
    std::unique_ptr<RawClient> c = Connected(id);
    if (!c) return nullptr;
    const std::optional<nodefl_wire_Welcome> welcome = c->Register(id, ConstByteSpan(token));
    if (!welcome) {
      ADD_FAILURE() << "device " << id << ": no Welcome on resuming";
      return nullptr;
    }
    EXPECT_TRUE(welcome->resumed);
    EXPECT_EQ(welcome->last_relay_send_id, last_send_id);
    return c;
  }

  // First member: destroyed after every client that runs on it.
  asio::io_context io_;
  std::map<uint32_t, std::unique_ptr<ClientCredentials>> credentials_;

  static inline TestDeployment* deployment_ = nullptr;
  static inline ServerUnderTest* server_ = nullptr;
  static inline std::string setup_error_;
  static inline uint32_t hello_timeout_ms_ = 0;
};

// ---- 2. refused credentials --------------------------------------------------------

TEST_F(TransportTest, CertificateFromAnotherCaFailsTheHandshake) {
  // A complete, self-consistent PKI the server has never heard of, issuing a
  // certificate for an id the server does know (device 1).
  testing::TestPki rogue(/*seed=*/666, "rogue CA");
  const testing::TestIdentity forged = rogue.Device(1);
  std::string error;
  // The client trusts the real deployment CA, so only the server's check of
  // the client certificate can fail.
  auto creds = MakeClientCredentials(deployment_->pki().ca_der(), forged, 42, &error);
  ASSERT_NE(creds, nullptr) << error;
  RawClient client(io_, *creds);
  const Status st = client.Connect(server_->port());
  EXPECT_FALSE(st.ok()) << "the server accepted a certificate from a foreign CA";
  ASSERT_NE(client.local_port(), 0);
  EXPECT_TRUE(Logged("tls_handshake_failed", client));
  EXPECT_FALSE(LogHasLine(server_->LogText(), "registered", {client.peer_field()}));

  // Device 1 with its genuine certificate is not affected.
  std::unique_ptr<RawClient> genuine = Registered(1);
  ASSERT_NE(genuine, nullptr);
  ExpectHeartbeatEcho(*genuine, 1);
}

TEST_F(TransportTest, ValidCertificateForUnknownDeviceIsRefusedAtHello) {
  // Issued by the deployment CA, but the server holds no credentials for 900.
  const testing::TestIdentity stranger = deployment_->pki().Device(900);
  std::string error;
  auto creds = MakeClientCredentials(deployment_->pki().ca_der(), stranger, 43, &error);
  ASSERT_NE(creds, nullptr) << error;
  RawClient client(io_, *creds);
  ASSERT_TRUE(client.Connect(server_->port()).ok()) << "the CA-signed certificate should pass TLS";
  EXPECT_FALSE(client.Register(900)) << "the server welcomed a device it has no credentials for";
  ExpectRefused(client, StatusCode::kPermissionDenied, /*offending_seq=*/1);
  EXPECT_TRUE(Logged("registration_refused", client, {"device=900", "code=PERMISSION_DENIED"}));
}

// ---- 3. identity ---------------------------------------------------------------------

TEST_F(TransportTest, DeviceCannotRegisterAsAnotherDevice) {
  std::unique_ptr<RawClient> impostor = Connected(5);
  ASSERT_NE(impostor, nullptr);
  EXPECT_FALSE(impostor->Register(6)) << "device 5's certificate registered as device 6";
  ExpectRefused(*impostor, StatusCode::kPermissionDenied, /*offending_seq=*/1);
  EXPECT_TRUE(Logged("identity_mismatch", *impostor, {"device=5", "code=PERMISSION_DENIED"}));

  // Device 6 was not harmed: it registers as a fresh device and is served.
  std::unique_ptr<RawClient> six = Registered(6);
  ASSERT_NE(six, nullptr);
  ExpectHeartbeatEcho(*six, 6);
  // Nor is device 5 locked out of its own identity.
  std::unique_ptr<RawClient> five = Registered(5);
  ASSERT_NE(five, nullptr);
  ExpectHeartbeatEcho(*five, 5);
}

// ---- 4. sealing across the relay ---------------------------------------------------

// Asks the server (through `client`) for `peer_id`'s certificate and derives
// the job keys the way the neighbour-echo role does: verify against the
// pinned CA and the expected id, ECDH pair keys, then per-job keys with both
// ephemeral keys (here exchanged by the test: no job runs on this server,
// so it has no job keys to hand out and answers with the certificate alone).
void DeriveKeysThroughServer(RawClient& client, ClientCredentials& own, uint32_t own_id, uint32_t peer_id,
                             const seal::JobKeyPair& own_job_key, ConstByteSpan peer_job_key, uint64_t job_id,
                             const std::vector<uint8_t>& genuine_der, seal::PairKeys* job_keys) {
  auto req = NewEnvelope(nodefl_wire_Envelope_peer_key_request_tag, job_id, 1);
  req->body.peer_key_request.device_ids[0] = peer_id;
  req->body.peer_key_request.device_ids_count = 1;
  ASSERT_TRUE(client.Send(*req).ok());
  std::unique_ptr<nodefl_wire_Envelope> answer = client.Next();
  ASSERT_NE(answer, nullptr);
  ASSERT_EQ(answer->which_body, nodefl_wire_Envelope_peer_certificate_tag) << protocol::BodyName(answer->which_body);
  const nodefl_wire_PeerCertificate& cert = answer->body.peer_certificate;
  ASSERT_EQ(cert.device_id, peer_id);
  ASSERT_TRUE(cert.found);
  EXPECT_EQ(BytesOf(cert.certificate_der), genuine_der) << "the server handed out another certificate";
  seal::PeerPublicKey peer_key;
  ASSERT_TRUE(seal::VerifyPeerCertificate(own.credentials, protocol::BytesOf(cert.certificate_der), peer_id, &peer_key).ok());
  seal::PairKeys pair;
  ASSERT_TRUE(
      seal::DerivePairKeys(own.credentials, peer_key, own_id, peer_id, &crypto::DrbgRandom, &own.drbg, &pair).ok());
  EXPECT_EQ(cert.job_key.size, 0u) << "a job key for a job that does not run";
  ASSERT_TRUE(seal::DeriveJobKeys(pair, own_job_key, own_id, peer_job_key, &crypto::DrbgRandom, &own.drbg, job_keys).ok());
}

TEST_F(TransportTest, TamperedRelayPayloadIsDetectedByTheReceiver) {
  const uint32_t a_id = FreshId(), b_id = FreshId();
  std::unique_ptr<RawClient> a = Registered(a_id);
  std::unique_ptr<RawClient> b = Registered(b_id);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);

  constexpr uint64_t kJob = 77;
  const uint8_t salt[seal::kMinJobSaltBytes] = {0x5a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  seal::PairKeys a_keys, b_keys;
  seal::JobKeyPair a_job, b_job;
  ASSERT_TRUE(a_job.Generate(kJob, ConstByteSpan(salt), &crypto::DrbgRandom, &CredentialsFor(a_id).drbg).ok());
  ASSERT_TRUE(b_job.Generate(kJob, ConstByteSpan(salt), &crypto::DrbgRandom, &CredentialsFor(b_id).drbg).ok());
  ASSERT_NO_FATAL_FAILURE(DeriveKeysThroughServer(*a, CredentialsFor(a_id), a_id, b_id, a_job, b_job.public_key(),
                                                  kJob, deployment_->device(b_id).certificate_der, &a_keys));
  ASSERT_NO_FATAL_FAILURE(DeriveKeysThroughServer(*b, CredentialsFor(b_id), b_id, a_id, b_job, a_job.public_key(),
                                                  kJob, deployment_->device(a_id).certificate_der, &b_keys));
  // Both ends reached the same keys from certificates the server relayed.
  ASSERT_EQ(std::memcmp(a_keys.low_to_high, b_keys.low_to_high, seal::kSealKeyBytes), 0);
  ASSERT_EQ(std::memcmp(a_keys.high_to_low, b_keys.high_to_low, seal::kSealKeyBytes), 0);

  const std::vector<uint8_t> plaintext = Bytes("the server must neither read nor alter this sentence, ever");
  // One message per tampered region (key id, counter, ciphertext, tag), then an intact one.
  struct Sent {
    std::vector<uint8_t> sealed;
    bool tampered;
  };
  std::vector<Sent> sent;
  const size_t sealed_size = plaintext.size() + seal::kSealOverheadBytes;
  for (size_t flip : {size_t{3}, seal::kSealKeyIdBytes + 3, seal::kSealKeyIdBytes + seal::kSealCounterBytes + 10,
                      sealed_size - 1, size_t{SIZE_MAX}}) {
    std::vector<uint8_t> out(sealed_size);
    const seal::SealHeader header{a_id, b_id, kJob, /*counter=*/sent.size() + 1};
    const Result<size_t> n = seal::Seal(a_keys, header, ConstByteSpan(plaintext), ByteSpan(out));
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, sealed_size);
    // What crosses the server does not contain the plaintext.
    EXPECT_EQ(std::search(out.begin(), out.end(), plaintext.begin(), plaintext.begin() + 16), out.end());
    if (flip != SIZE_MAX) out[flip] ^= 0x01;
    auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag, kJob, 2);
    send->body.relay_send.dst = b_id;
    ASSERT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(out)).ok());
    ASSERT_TRUE(a->Send(*send).ok());
    sent.push_back({out, flip != SIZE_MAX});
  }

  seal::ReplayWindow window;
  uint64_t last_relay_id = 0;
  for (const Sent& s : sent) {
    std::unique_ptr<nodefl_wire_Envelope> got = b->Next();
    ASSERT_NE(got, nullptr) << "a relay message did not arrive";
    ASSERT_EQ(got->which_body, nodefl_wire_Envelope_relay_deliver_tag) << protocol::BodyName(got->which_body);
    const nodefl_wire_RelayDeliver& d = got->body.relay_deliver;
    EXPECT_EQ(d.src, a_id);
    EXPECT_EQ(got->job_id, kJob);
    EXPECT_EQ(got->round, 2u);
    EXPECT_GT(d.relay_id, last_relay_id);
    last_relay_id = d.relay_id;
    // The relay passes on exactly the bytes it was given, tampered or not.
    EXPECT_EQ(BytesOf(d.sealed), s.sealed);

    std::vector<uint8_t> opened(plaintext.size() + 1, 0xee);
    uint64_t counter = 0;
    const Result<size_t> n = seal::Open(b_keys, d.src, b_id, got->job_id, protocol::BytesOf(d.sealed),
                                        ByteSpan(opened), &counter);
    if (s.tampered) {
      EXPECT_EQ(n.status(), Status::Unauthenticated()) << "a flipped bit went unnoticed";
      // Open zeroes the bytes a plaintext would have occupied.
      EXPECT_TRUE(std::all_of(opened.begin(), opened.begin() + static_cast<std::ptrdiff_t>(plaintext.size()),
                              [](uint8_t v) { return v == 0; }))
          << "a failed Open released bytes";
    } else {
      ASSERT_TRUE(n.ok()) << n.status().str();
      ASSERT_EQ(*n, plaintext.size());
      EXPECT_TRUE(std::equal(plaintext.begin(), plaintext.end(), opened.begin()));
      EXPECT_TRUE(window.Accept(counter).ok());
      // The same bytes under another job, or re-addressed, do not open.
      EXPECT_FALSE(seal::Open(b_keys, d.src, b_id, kJob + 1, protocol::BytesOf(d.sealed), ByteSpan(opened), &counter).ok());
    }
  }
  auto ack = NewEnvelope(nodefl_wire_Envelope_relay_ack_tag);
  ack->body.relay_ack.relay_id = last_relay_id;
  ASSERT_TRUE(b->Send(*ack).ok());
  ExpectHeartbeatEcho(*b, 2);
  // Nor does the plaintext show up in anything the server wrote down.
  EXPECT_EQ(server_->LogText().find("neither read nor alter"), std::string::npos);
  EXPECT_EQ(a->bad_frames() + b->bad_frames(), 0u);
}

// ---- 5. malformed input ------------------------------------------------------------

TEST_F(TransportTest, GarbageFrameIsDataLoss) {
  const uint32_t bystander_id = FreshId(), offender_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Registered(offender_id);
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);

  const std::vector<uint8_t> garbage = Bytes("this is not protobuf!");
  nodefl_wire_Envelope scratch;
  ASSERT_EQ(protocol::DecodeEnvelope(ConstByteSpan(garbage), &scratch), Status::DataLoss()) << "test input is not garbage";
  const std::vector<uint8_t> frame = RawFrame(garbage);
  ASSERT_TRUE(offender->WriteRaw(ConstByteSpan(frame)).ok());
  ExpectRefused(*offender, StatusCode::kDataLoss, /*offending_seq=*/0);
  EXPECT_TRUE(Logged("bad_message", *offender, {"code=DATA_LOSS", "device=" + std::to_string(offender_id)}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, ZeroLengthFrameIsDataLoss) {
  const uint32_t bystander_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Connected(FreshId());
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  const std::vector<uint8_t> frame = RawFrame({});
  ASSERT_TRUE(offender->WriteRaw(ConstByteSpan(frame)).ok());
  ExpectRefused(*offender, StatusCode::kDataLoss, /*offending_seq=*/0);
  EXPECT_TRUE(Logged("bad_frame", *offender, {"code=DATA_LOSS"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, OversizeFrameIsResourceExhausted) {
  const uint32_t bystander_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  // Before Hello: the server refuses on the prefix alone, without reading
  // (or waiting for) the megabyte it announces.
  std::unique_ptr<RawClient> offender = Connected(FreshId());
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  std::vector<uint8_t> prefix(protocol::kFrameHeaderBytes);
  protocol::WriteFrameLength(1u << 20, ByteSpan(prefix));
  ASSERT_TRUE(offender->WriteRaw(ConstByteSpan(prefix)).ok());
  ExpectRefused(*offender, StatusCode::kResourceExhausted, /*offending_seq=*/0);
  EXPECT_TRUE(Logged("bad_frame", *offender, {"code=RESOURCE_EXHAUSTED"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, UnknownMessageTypeIsUnimplemented) {
  const uint32_t bystander_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  ASSERT_NE(bystander, nullptr);
  // 15: an unused number inside the body's range 10-51; 99: beyond it.
  for (uint32_t field : {15u, 99u}) {
    SCOPED_TRACE("field " + std::to_string(field));
    const uint32_t offender_id = FreshId();
    std::unique_ptr<RawClient> offender = Registered(offender_id);
    ASSERT_NE(offender, nullptr);
    const std::vector<uint8_t> payload = EnvelopeWithUnknownField(field, /*seq=*/2);
    nodefl_wire_Envelope scratch;
    ASSERT_EQ(protocol::DecodeEnvelope(ConstByteSpan(payload), &scratch), Status::Unimplemented());
    const std::vector<uint8_t> frame = RawFrame(payload);
    ASSERT_TRUE(offender->WriteRaw(ConstByteSpan(frame)).ok());
    // The envelope never decodes, so the server names no offending seq.
    ExpectRefused(*offender, StatusCode::kUnimplemented, /*offending_seq=*/0);
    EXPECT_TRUE(Logged("bad_message", *offender, {"code=UNIMPLEMENTED"}));
  }
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, ServerOnlyMessageFromDeviceIsUnimplemented) {
  const uint32_t bystander_id = FreshId(), offender_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Registered(offender_id);
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  auto welcome = NewEnvelope(nodefl_wire_Envelope_welcome_tag);
  welcome->body.welcome.resumed = true;
  ASSERT_TRUE(offender->Send(*welcome).ok());  // seq 2
  ExpectRefused(*offender, StatusCode::kUnimplemented, /*offending_seq=*/2);
  EXPECT_TRUE(Logged("unexpected_message_type", *offender, {"code=UNIMPLEMENTED"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, RelaySendBeforeHelloIsFailedPrecondition) {
  const uint32_t bystander_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Connected(FreshId());
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag);
  send->body.relay_send.dst = bystander_id;
  const std::vector<uint8_t> payload = Bytes("sneaking in before Hello");
  ASSERT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(payload)).ok());
  ASSERT_TRUE(offender->Send(*send).ok());  // seq 1
  ExpectRefused(*offender, StatusCode::kFailedPrecondition, /*offending_seq=*/1);
  EXPECT_TRUE(Logged("out_of_phase", *offender, {"code=FAILED_PRECONDITION"}));
  // Nothing from the refused connection reached the bystander: its next
  // frame is the answer to its own heartbeat.
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, SecondHelloIsFailedPrecondition) {
  const uint32_t bystander_id = FreshId(), offender_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Registered(offender_id);
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  EXPECT_FALSE(offender->Register(offender_id));  // seq 2
  ExpectRefused(*offender, StatusCode::kFailedPrecondition, /*offending_seq=*/2);
  EXPECT_TRUE(Logged("out_of_phase", *offender, {"code=FAILED_PRECONDITION"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, OutOfSequenceSeqIsDataLoss) {
  const uint32_t bystander_id = FreshId(), offender_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  std::unique_ptr<RawClient> offender = Registered(offender_id);
  ASSERT_NE(bystander, nullptr);
  ASSERT_NE(offender, nullptr);
  auto hb = NewEnvelope(nodefl_wire_Envelope_heartbeat_tag);
  ASSERT_TRUE(offender->SendWithSeq(*hb, /*seq=*/7).ok());  // 2 expected
  ExpectRefused(*offender, StatusCode::kDataLoss, /*offending_seq=*/7);
  EXPECT_TRUE(Logged("out_of_sequence", *offender, {"code=DATA_LOSS"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

TEST_F(TransportTest, NoHelloWithinTimeoutIsClosed) {
  const uint32_t bystander_id = FreshId();
  std::unique_ptr<RawClient> bystander = Registered(bystander_id);
  ASSERT_NE(bystander, nullptr);
  const auto connected_at = std::chrono::steady_clock::now();
  std::unique_ptr<RawClient> silent = Connected(FreshId());
  ASSERT_NE(silent, nullptr);
  // Well before the handshake deadline (5 s), which a server that only
  // checked deadlines it had armed earlier would wait for instead.
  ASSERT_TRUE(silent->WaitClosed(milliseconds(hello_timeout_ms_ + 2500)))
      << "a device that never said Hello kept its connection";
  const auto waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - connected_at);
  // Not closed early (half the timeout leaves room for the server's clock
  // starting a little before the client's handshake ends).
  EXPECT_GE(waited.count(), hello_timeout_ms_ / 2);
  // If the server says anything before closing, it is a timeout Error.
  while (std::unique_ptr<nodefl_wire_Envelope> e = silent->Next(milliseconds(0))) {
    ASSERT_EQ(e->which_body, nodefl_wire_Envelope_error_tag) << protocol::BodyName(e->which_body);
    EXPECT_EQ(e->body.error.code, static_cast<uint32_t>(StatusCode::kDeadlineExceeded));
  }
  EXPECT_TRUE(Logged("deadline_exceeded", *silent, {"phase=hello"}));
  ExpectBystanderServed(*bystander, bystander_id);
}

// ---- 6. resume ------------------------------------------------------------------------

// Numbered RelaySends (send_id): the server acknowledges them, tells a
// resuming device the highest it accepted, and routes a resent one only if
// it had not accepted it before: what a broken connection swallowed can be
// sent again without a receiver getting anything twice.
TEST_F(TransportTest, NumberedRelaySendsAreAcknowledgedAndRoutedOnceAcrossAResume) {
  const uint32_t a_id = FreshId(), b_id = FreshId();
  std::unique_ptr<RawClient> b = Registered(b_id);
  ASSERT_NE(b, nullptr);
  std::unique_ptr<RawClient> a = Connected(a_id);
  ASSERT_NE(a, nullptr);
  const std::optional<nodefl_wire_Welcome> first = a->Register(a_id);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->last_relay_send_id, 0u);
  const std::vector<uint8_t> token = BytesOf(first->resume_token);

  auto relay = [&](RawClient& c, uint64_t send_id, std::string_view text) {
    auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag);
    send->body.relay_send.dst = b_id;
    send->body.relay_send.send_id = send_id;
    const std::vector<uint8_t> payload = Bytes(text);
    EXPECT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(payload)).ok());
    EXPECT_TRUE(c.Send(*send).ok());
  };
  relay(*a, 1, "one");
  std::unique_ptr<nodefl_wire_Envelope> ack = a->Next();
  ASSERT_NE(ack, nullptr);
  ASSERT_EQ(ack->which_body, nodefl_wire_Envelope_relay_send_ack_tag) << protocol::BodyName(ack->which_body);
  EXPECT_EQ(ack->body.relay_send_ack.send_id, 1u);
  relay(*a, 2, "two");
  ack = a->Next();
  ASSERT_NE(ack, nullptr);
  ASSERT_EQ(ack->which_body, nodefl_wire_Envelope_relay_send_ack_tag);
  EXPECT_EQ(ack->body.relay_send_ack.send_id, 2u);

  // A's connection breaks before it saw the second ack: it resumes, learns
  // the server has 2, and sends 2 again anyway (as a device that lost the
  // Welcome's figure would) and then 3.
  std::unique_ptr<RawClient> a2 = Resumed(*a, a_id, token, 2);
  ASSERT_NE(a2, nullptr);
  relay(*a2, 2, "two");
  relay(*a2, 3, "three");
  ack = a2->Next();
  ASSERT_NE(ack, nullptr);
  ASSERT_EQ(ack->which_body, nodefl_wire_Envelope_relay_send_ack_tag);
  // One ack per read: 2 (the duplicate) alone, or both at once.
  if (ack->body.relay_send_ack.send_id == 2u) ack = a2->Next();
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->body.relay_send_ack.send_id, 3u);

  // B gets one, two, three: once each, in order.
  for (const char* text : {"one", "two", "three"}) {
    std::unique_ptr<nodefl_wire_Envelope> got = b->Next();
    ASSERT_NE(got, nullptr) << text;
    ASSERT_EQ(got->which_body, nodefl_wire_Envelope_relay_deliver_tag) << protocol::BodyName(got->which_body);
    EXPECT_EQ(BytesOf(got->body.relay_deliver.sealed), Bytes(text));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(*b, 10));  // nothing else came
  EXPECT_EQ(a->bad_frames() + a2->bad_frames() + b->bad_frames(), 0u);
}

TEST_F(TransportTest, ResumeRedeliversUnackedMessagesInOrderAndNotAckedOnes) {
  const uint32_t a_id = FreshId(), b_id = FreshId();
  std::unique_ptr<RawClient> a = Registered(a_id);
  ASSERT_NE(a, nullptr);
  std::unique_ptr<RawClient> b = Connected(b_id);
  ASSERT_NE(b, nullptr);
  const std::optional<nodefl_wire_Welcome> first = b->Register(b_id);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->resumed);
  const std::vector<uint8_t> token = BytesOf(first->resume_token);
  ASSERT_EQ(token.size(), protocol::kMaxResumeTokenBytes);

  // B's connection breaks (no Goodbye); wait until the server has noticed.
  b->Close();
  ASSERT_TRUE(Logged("disconnected", *b, {"device=" + std::to_string(b_id)}));

  auto relay = [&](std::string_view text) {
    auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag);
    send->body.relay_send.dst = b_id;
    const std::vector<uint8_t> payload = Bytes(text);
    EXPECT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(payload)).ok());
    EXPECT_TRUE(a->Send(*send).ok());
  };
  relay("first while offline");
  relay("second while offline");
  // The server handles a connection's frames in order: once the heartbeat
  // is answered, both messages are queued for B.
  ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(*a, 10));

  auto expect_delivery = [&](RawClient& c, uint64_t relay_id, std::string_view text) {
    std::unique_ptr<nodefl_wire_Envelope> got = c.Next();
    ASSERT_NE(got, nullptr) << "missing delivery " << relay_id;
    ASSERT_EQ(got->which_body, nodefl_wire_Envelope_relay_deliver_tag) << protocol::BodyName(got->which_body);
    EXPECT_EQ(got->body.relay_deliver.relay_id, relay_id);
    EXPECT_EQ(got->body.relay_deliver.src, a_id);
    EXPECT_EQ(BytesOf(got->body.relay_deliver.sealed), Bytes(text));
  };

  // Reconnect with the token: the same session, both messages, in order.
  std::unique_ptr<RawClient> b2 = Connected(b_id);
  ASSERT_NE(b2, nullptr);
  const std::optional<nodefl_wire_Welcome> resumed = b2->Register(b_id, ConstByteSpan(token));
  ASSERT_TRUE(resumed) << "resume refused";
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->pending_messages, 2u);
  EXPECT_EQ(BytesOf(resumed->resume_token), token) << "tokens are stable within a session";
  ASSERT_NO_FATAL_FAILURE(expect_delivery(*b2, 1, "first while offline"));
  ASSERT_NO_FATAL_FAILURE(expect_delivery(*b2, 2, "second while offline"));
  auto ack = NewEnvelope(nodefl_wire_Envelope_relay_ack_tag);
  ack->body.relay_ack.relay_id = 2;
  ASSERT_TRUE(b2->Send(*ack).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(*b2, 11));  // the ack is handled

  // An orderly close this time, then one more message while B is away.
  auto bye = NewEnvelope(nodefl_wire_Envelope_goodbye_tag);
  protocol::SetString(bye->body.goodbye.reason, "back soon");
  ASSERT_TRUE(b2->Send(*bye).ok());
  ASSERT_TRUE(b2->WaitClosed());
  ASSERT_TRUE(Logged("disconnected", *b2, {"device=" + std::to_string(b_id)}));
  relay("third while offline");
  ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(*a, 12));

  // B claims to have processed nothing (last_delivered_relay_id = 0): only
  // the server's record of its ack keeps 1 and 2 from coming back.
  std::unique_ptr<RawClient> b3 = Connected(b_id);
  ASSERT_NE(b3, nullptr);
  const std::optional<nodefl_wire_Welcome> again = b3->Register(b_id, ConstByteSpan(token), 0);
  ASSERT_TRUE(again) << "second resume refused";
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(again->pending_messages, 1u);
  ASSERT_NO_FATAL_FAILURE(expect_delivery(*b3, 3, "third while offline"));
  // Nothing else is queued: the next frame answers B's own heartbeat.
  ASSERT_NO_FATAL_FAILURE(ExpectHeartbeatEcho(*b3, 13));
  EXPECT_EQ(a->bad_frames() + b2->bad_frames() + b3->bad_frames(), 0u);
}

TEST_F(TransportTest, ResumeWithAnotherTokenIsRefused) {
  const uint32_t id = FreshId();
  std::unique_ptr<RawClient> first = Registered(id);
  ASSERT_NE(first, nullptr);
  first->Close();
  ASSERT_TRUE(Logged("disconnected", *first));
  std::unique_ptr<RawClient> second = Connected(id);
  ASSERT_NE(second, nullptr);
  const std::vector<uint8_t> guessed(protocol::kMaxResumeTokenBytes, 0x42);
  EXPECT_FALSE(second->Register(id, ConstByteSpan(guessed)));
  ExpectRefused(*second, StatusCode::kUnauthenticated, /*offending_seq=*/1);
  EXPECT_TRUE(Logged("registration_refused", *second, {"code=UNAUTHENTICATED"}));
}

// ---- credit: a full destination does not stop its senders being read -------------

// Device B acknowledges nothing, so the relay holds at most four messages
// for it (offline_queue_messages). Device A sends seven numbered messages
// to B: the relay takes four; the other three wait on A's connection,
// unacknowledged, while the server goes on reading it (a heartbeat is
// answered at once, where a protocol-v1 reader would wait for B for up to
// relay_backpressure_wait_ms and then refuse A). Once B acknowledges, the
// three go through, in order, and A's window is acknowledged to 7.
// Numbered JobData uploads share the RelaySends' numbering: acknowledged
// the same way and counted in Welcome.last_relay_send_id; one written again
// after a resume is acknowledged without being taken again (Relay's
// ClaimSendId, server_core_relay_test.cc).
TEST_F(TransportTest, NumberedUploadsAreAcknowledgedAndTakenOnceAcrossAResume) {
  const uint32_t a_id = FreshId();
  std::unique_ptr<RawClient> a = Connected(a_id);
  ASSERT_NE(a, nullptr);
  const std::optional<nodefl_wire_Welcome> first = a->Register(a_id);
  ASSERT_TRUE(first);
  const std::vector<uint8_t> token = BytesOf(first->resume_token);
  auto upload = [&](RawClient& c, uint64_t send_id) {
    auto record = NewEnvelope(nodefl_wire_Envelope_job_data_tag);
    record->job_id = 9;
    record->round = 1;
    record->body.job_data.kind = 4;
    record->body.job_data.send_id = send_id;
    const std::vector<uint8_t> payload = Bytes("record " + std::to_string(send_id));
    EXPECT_TRUE(protocol::SetBytes(&record->body.job_data.data, ConstByteSpan(payload)).ok());
    EXPECT_TRUE(c.Send(*record).ok());
  };
  upload(*a, 1);
  std::unique_ptr<nodefl_wire_Envelope> ack = a->Next();
  ASSERT_NE(ack, nullptr);
  ASSERT_EQ(ack->which_body, nodefl_wire_Envelope_relay_send_ack_tag) << protocol::BodyName(ack->which_body);
  EXPECT_EQ(ack->body.relay_send_ack.send_id, 1u);

  std::unique_ptr<RawClient> a2 = Resumed(*a, a_id, token, 1);
  ASSERT_NE(a2, nullptr);
  upload(*a2, 1);  // written again although the server has it
  upload(*a2, 2);
  ack = a2->Next();
  ASSERT_NE(ack, nullptr);
  ASSERT_EQ(ack->which_body, nodefl_wire_Envelope_relay_send_ack_tag);
  if (ack->body.relay_send_ack.send_id == 1u) ack = a2->Next();
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->body.relay_send_ack.send_id, 2u);
  EXPECT_EQ(a->bad_frames() + a2->bad_frames(), 0u);
}

TEST(RelayCreditTest, SendsWithoutRoomWaitOnTheServerWhileTheSenderIsStillRead) {
  const uint32_t a_id = 1, b_id = 2;
  TestDeployment deployment({a_id, b_id}, /*seed=*/61);
  ASSERT_TRUE(deployment.ok()) << deployment.error();
  server::ServerConfig config = deployment.BaseConfig();
  config.offline_queue_messages = 4;
  config.relay_backpressure_wait_ms = 20000;  // far longer than the test waits for anything
  const server::ConfigStatus valid = server::ValidateConfig(config);
  ASSERT_TRUE(valid.ok) << valid.message;
  ServerUnderTest server(config, deployment.dir() / "server.log");
  ASSERT_TRUE(server.ok()) << server.error();

  asio::io_context io;
  std::string error;
  const std::unique_ptr<ClientCredentials> a_creds =
      MakeClientCredentials(deployment.pki().ca_der(), deployment.device(a_id), 71, &error);
  ASSERT_NE(a_creds, nullptr) << error;
  const std::unique_ptr<ClientCredentials> b_creds =
      MakeClientCredentials(deployment.pki().ca_der(), deployment.device(b_id), 72, &error);
  ASSERT_NE(b_creds, nullptr) << error;
  RawClient a(io, *a_creds), b(io, *b_creds);
  ASSERT_TRUE(b.Connect(server.port()).ok());
  ASSERT_TRUE(b.Register(b_id));
  ASSERT_TRUE(a.Connect(server.port()).ok());
  ASSERT_TRUE(a.Register(a_id));

  for (uint64_t send_id = 1; send_id <= 7; ++send_id) {
    auto send = NewEnvelope(nodefl_wire_Envelope_relay_send_tag);
    send->body.relay_send.dst = b_id;
    send->body.relay_send.send_id = send_id;
    const std::vector<uint8_t> payload = Bytes("message " + std::to_string(send_id));
    ASSERT_TRUE(protocol::SetBytes(&send->body.relay_send.sealed, ConstByteSpan(payload)).ok());
    ASSERT_TRUE(a.Send(*send).ok());
  }
  // An upload for the server numbered after them (send ids are one
  // sequence) waits behind them: it is not acknowledged before they are.
  auto upload = NewEnvelope(nodefl_wire_Envelope_job_data_tag);
  upload->job_id = 3;
  upload->body.job_data.kind = 1;
  upload->body.job_data.send_id = 8;
  ASSERT_TRUE(a.Send(*upload).ok());
  auto heartbeat = NewEnvelope(nodefl_wire_Envelope_heartbeat_tag);
  heartbeat->body.heartbeat.sent_at_us = 99;
  ASSERT_TRUE(a.Send(*heartbeat).ok());
  // A hears acknowledgements up to 4 (one per read of its frames), then the
  // heartbeat's echo.
  uint64_t acked = 0;
  for (;;) {
    std::unique_ptr<nodefl_wire_Envelope> e = a.Next(milliseconds(5000));
    ASSERT_NE(e, nullptr) << "A's heartbeat was not answered while its sends waited for B";
    if (e->which_body == nodefl_wire_Envelope_heartbeat_tag) break;
    ASSERT_EQ(e->which_body, nodefl_wire_Envelope_relay_send_ack_tag) << protocol::BodyName(e->which_body);
    EXPECT_GT(e->body.relay_send_ack.send_id, acked);
    acked = e->body.relay_send_ack.send_id;
  }
  EXPECT_EQ(acked, 4u) << "acknowledged a send the relay had not taken";

  // B has the four; it acknowledges them and gets the other three.
  auto expect_delivery = [&](uint64_t relay_id) {
    std::unique_ptr<nodefl_wire_Envelope> got = b.Next(milliseconds(5000));
    ASSERT_NE(got, nullptr) << "missing delivery " << relay_id;
    ASSERT_EQ(got->which_body, nodefl_wire_Envelope_relay_deliver_tag) << protocol::BodyName(got->which_body);
    EXPECT_EQ(got->body.relay_deliver.relay_id, relay_id);
    EXPECT_EQ(got->body.relay_deliver.src, a_id);
    EXPECT_EQ(BytesOf(got->body.relay_deliver.sealed), Bytes("message " + std::to_string(relay_id)));
  };
  for (uint64_t relay_id = 1; relay_id <= 4; ++relay_id) ASSERT_NO_FATAL_FAILURE(expect_delivery(relay_id));
  auto ack = NewEnvelope(nodefl_wire_Envelope_relay_ack_tag);
  ack->body.relay_ack.relay_id = 4;
  ASSERT_TRUE(b.Send(*ack).ok());
  for (uint64_t relay_id = 5; relay_id <= 7; ++relay_id) ASSERT_NO_FATAL_FAILURE(expect_delivery(relay_id));
  while (acked < 8) {
    std::unique_ptr<nodefl_wire_Envelope> e = a.Next(milliseconds(5000));
    ASSERT_NE(e, nullptr) << "A's last sends were never acknowledged (at " << acked << ")";
    ASSERT_EQ(e->which_body, nodefl_wire_Envelope_relay_send_ack_tag) << protocol::BodyName(e->which_body);
    acked = e->body.relay_send_ack.send_id;
  }
  EXPECT_EQ(acked, 8u);
  EXPECT_FALSE(a.closed());
  EXPECT_EQ(a.bad_frames() + b.bad_frames(), 0u);
  const std::optional<int> status = server.StopAndWait(milliseconds(10000));
  EXPECT_EQ(status, std::optional<int>(0));
  EXPECT_TRUE(LogHasLine(server.LogText(), "stopped", {"relay_sends_parked=3", "relay_sent=7"})) << server.LogText();
}

// ---- 1. neighbour-echo on karate --------------------------------------------------

// The neighbour-echo job on karate over TLS: every device sends
// `messages_per_edge` sealed messages to each neighbour through the relay
// and checks what it receives. `tweak` adjusts the server's configuration.
void RunKarateEcho(uint32_t messages_per_edge, const std::function<void(server::ServerConfig&)>& tweak) {
  const fs::path karate = fs::path(NODEFL_DATASETS_DIR) / "karate";
  // No silent skip: without the dataset this test fails.
  const dataset::LoadResult loaded = dataset::LoadGraph(karate);
  ASSERT_TRUE(loaded.ok) << "the karate dataset is required (" << karate << "): " << loaded.error;
  const dataset::Graph& g = loaded.graph;
  ASSERT_EQ(g.num_nodes, 34u);
  ASSERT_EQ(g.num_edges, 78u);

  std::vector<uint32_t> ids(g.num_nodes);
  std::iota(ids.begin(), ids.end(), 0u);
  TestDeployment deployment(ids, /*seed=*/34);
  ASSERT_TRUE(deployment.ok()) << deployment.error();
  server::ServerConfig config = deployment.BaseConfig();
  config.job = "neighbour-echo";
  config.job_quorum = g.num_nodes;
  config.exit_after_jobs = 1;
  server::jobs::Options<server::jobs::NeighbourEchoJobConfig>(config).messages_per_edge = messages_per_edge;
  config.job_round_deadline_ms = 8000;  // a stuck run fails instead of waiting minutes
  tweak(config);
  const server::ConfigStatus valid = server::ValidateConfig(config);
  ASSERT_TRUE(valid.ok) << valid.message;
  ServerUnderTest server(config, deployment.dir() / "server.log");
  ASSERT_TRUE(server.ok()) << server.error();

  tls::TlsCredentials ca;
  ASSERT_TRUE(ca.LoadCaChain(ConstByteSpan(deployment.pki().ca_der())).ok());
  emulator::FleetStats stats;
  emulator::ConnectGate gate(16);
  emulator::FleetSetup fleet;
  fleet.server = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port());
  fleet.server_name = "localhost";
  fleet.ca = &ca;
  fleet.stats = &stats;
  fleet.gate = &gate;
  fleet.max_connect_attempts = 5;

  asio::io_context io;
  std::vector<std::shared_ptr<emulator::EmulatedDevice>> devices;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    emulator::DeviceSetup setup;
    setup.id = v;
    setup.neighbours.assign(g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v]),
                            g.neighbours.begin() + static_cast<std::ptrdiff_t>(g.offsets[v + 1]));
    setup.certificate_der = deployment.device(v).certificate_der;
    setup.private_key_der = deployment.device(v).private_key_der;
    auto device = std::make_shared<emulator::EmulatedDevice>(io, fleet, std::move(setup));
    ASSERT_TRUE(device->Init().ok()) << "device " << v;
    devices.push_back(std::move(device));
  }
  for (auto& d : devices) d->Start();

  // The server ends on its own once the job is finished (exit_after_jobs)
  // and sends every device away; run the devices until then.
  const bool ended = RunUntil(
      io, [&] { return !server.running() && stats.finished + stats.failed >= g.num_nodes; }, milliseconds(25000));
  for (auto& d : devices) d->Stop();
  io.restart();
  io.run_for(milliseconds(1000));
  ASSERT_TRUE(ended) << "finished " << stats.finished << ", failed " << stats.failed << ", server running "
                     << server.running() << "\n" << server.LogText();

  const std::optional<int> exit_status = server.WaitForExit(milliseconds(1000));
  EXPECT_EQ(exit_status, std::optional<int>(0)) << "Server::Run() must return 0 for a verified job";

  uint64_t sent = 0, received = 0;
  for (uint32_t v = 0; v < g.num_nodes; ++v) {
    SCOPED_TRACE("device " + std::to_string(v));
    const emulator::EmulatedDevice& d = *devices[v];
    EXPECT_TRUE(d.finished()) << d.last_error();
    EXPECT_FALSE(d.failed()) << d.last_error();
    const echo::NeighbourEchoRole::Stats* s = d.stats();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->expected, g.degree(v) * messages_per_edge);
    EXPECT_EQ(s->received, g.degree(v) * messages_per_edge);
    EXPECT_EQ(s->sent, g.degree(v) * messages_per_edge);
    EXPECT_EQ(s->duplicates, 0u);
    EXPECT_EQ(s->rejected, 0u);
    EXPECT_EQ(s->key_failures, 0u);
    sent += s->sent;
    received += s->received;
  }
  const uint64_t expected = 2 * g.num_edges * messages_per_edge;  // every directed edge
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(received, expected);
  EXPECT_EQ(stats.verified_received.load(), expected);
  EXPECT_EQ(stats.failed.load(), 0u);
  // The server's own account agrees.
  EXPECT_TRUE(LogHasLine(server.LogText(), "job_finished",
                                 {"verified=true", "participants=34", "expected_messages=" + std::to_string(expected),
                                  "received_verified=" + std::to_string(expected), "duplicates=0", "rejected=0"}))
      << server.LogText();
}

// One sealed message per directed edge: 2 x 78 = 156.
TEST(NeighbourEchoKarateTest, EveryDeviceReceivesEveryNeighbourMessageIntact) {
  RunKarateEcho(1, [](server::ServerConfig&) {});
}

// Every device sends 40 messages to each neighbour at once through queues
// of 8 unacknowledged messages per device: senders keep finding their
// destination full, and with protocol v1's waiting readers (a connection
// not read while its send waits) the waits formed a cycle through karate's
// hubs that nothing drained, and senders were refused after
// relay_backpressure_wait_ms (relay_parked_bytes = 0 still shows it). With
// sends parked on the connection (credit) every message arrives.
TEST(NeighbourEchoKarateTest, AFloodThroughSmallQueuesCompletes) {
  RunKarateEcho(40, [](server::ServerConfig& config) {
    config.offline_queue_messages = 8;
    config.relay_backpressure_wait_ms = 3000;
  });
}

}  // namespace
}  // namespace nodefl::transport_test
