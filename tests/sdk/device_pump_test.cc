// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DevicePump end to end in memory: a device (TLS endpoint + session + a
// role, joined by the pump) talks to a scripted server that runs the real
// server-side TlsEndpoint and the real frame codec. Credentials come from
// TestPki.
#include "nodefl/client/device_pump.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "heap_counter.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/random/drbg.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "session_frames.h"
#include "test_pki.h"

namespace nodefl::client {
namespace {

using device::SessionState;
using testing::TestPki;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint32_t kDeviceId = 42;
constexpr size_t kReplyBytes = 3000;  // a RelaySend spanning several small reads

// Answers every JobStart with one large RelaySend and records deliveries.
class ReplyRole final : public device::Role {
 public:
  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO; }
  Status OnMessage(const nodefl_wire_Envelope& m, device::DeviceSession& session) override {
    if (m.which_body == nodefl_wire_Envelope_relay_deliver_tag) {
      ++delivered;
      last_delivered_size = m.body.relay_deliver.sealed.size;
      last_delivered_first = m.body.relay_deliver.sealed.bytes[0];
    }
    if (m.which_body != nodefl_wire_Envelope_job_start_tag) return Status::Ok();
    nodefl_wire_Envelope& out = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, m.job_id, m.round);
    out.body.relay_send.dst = 7;
    out.body.relay_send.sealed.size = kReplyBytes;
    for (size_t i = 0; i < kReplyBytes; ++i) out.body.relay_send.sealed.bytes[i] = static_cast<uint8_t>(i * 13 + 1);
    return session.Send(out);
  }
  Status OnPoll(uint64_t, device::DeviceSession&) override { return Status::Ok(); }
  int delivered = 0;
  size_t last_delivered_size = 0;
  uint8_t last_delivered_first = 0;
};

// The server: a real TLS endpoint and the real codec, scripted replies.
struct Server {
  explicit Server(TestPki& pki) : inbound(tls::kTlsRecommendedBufferBytes), outbound(tls::kTlsRecommendedBufferBytes) {
    EXPECT_TRUE(drbg.SeedDeterministic(11).ok());
    EXPECT_TRUE(pki.Load(pki.Server("localhost"), &credentials).ok());
    EXPECT_TRUE(config.Init(tls::TlsRole::kServer, credentials, pki.random_function(), &drbg).ok());
    EXPECT_TRUE(endpoint.Init(config, inbound, outbound, nullptr).ok());
  }

  // Handshake progress and decryption of whatever has arrived.
  void Step() {
    if (!endpoint.handshake_done()) {
      const Result<tls::TlsProgress> p = endpoint.Handshake();
      EXPECT_TRUE(p.ok()) << p.status().str();
      if (!endpoint.handshake_done()) return;
    }
    uint8_t chunk[1024];
    for (;;) {
      const Result<size_t> n = endpoint.ReadPlaintext(chunk);
      if (!n.ok()) {
        read_error = n.status();  // e.g. the device's close_notify
        break;
      }
      if (*n == 0) break;
      plain.insert(plain.end(), chunk, chunk + *n);
    }
    size_t pos = 0;
    while (pos + protocol::kFrameHeaderBytes <= plain.size()) {
      const size_t len = (size_t{plain[pos]} << 24) | (size_t{plain[pos + 1]} << 16) |
                         (size_t{plain[pos + 2]} << 8) | plain[pos + 3];
      if (pos + protocol::kFrameHeaderBytes + len > plain.size()) break;
      auto e = std::make_unique<nodefl_wire_Envelope>();
      EXPECT_TRUE(protocol::DecodeEnvelope(
                      ConstByteSpan(plain.data() + pos + protocol::kFrameHeaderBytes, len), e.get())
                      .ok());
      received.push_back(*e);
      pos += protocol::kFrameHeaderBytes + len;
    }
    plain.erase(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(pos));
  }

  // Encrypts one envelope as the next frame of this connection. Needs room
  // in the outbound buffer (the tests deliver between sends).
  void Send(const nodefl_wire_Envelope& e) {
    const std::vector<uint8_t> frame = nodefl::testing::FrameTo(e, next_seq++);
    size_t done = 0;
    while (done < frame.size()) {
      const Result<size_t> n = endpoint.WritePlaintext(ConstByteSpan(frame.data() + done, frame.size() - done));
      ASSERT_TRUE(n.ok());
      ASSERT_GT(*n, 0u) << "server outbound buffer full";
      done += *n;
    }
  }
  void Welcome() {
    nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
    e.which_body = nodefl_wire_Envelope_welcome_tag;
    e.body.welcome.resume_token.size = 32;
    std::memset(e.body.welcome.resume_token.bytes, 0xAB, 32);
    e.body.welcome.heartbeat_interval_ms = 1000;
    e.body.welcome.idle_timeout_ms = 60000;
    Send(e);
  }
  void JobStart(uint64_t job) {
    nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
    e.which_body = nodefl_wire_Envelope_job_start_tag;
    e.job_id = job;
    e.round = 1;
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
    Send(e);
  }
  void Deliver(uint64_t job, uint64_t relay_id, size_t size) {
    nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
    e.which_body = nodefl_wire_Envelope_relay_deliver_tag;
    e.job_id = job;
    e.body.relay_deliver.src = 3;
    e.body.relay_deliver.relay_id = relay_id;
    e.body.relay_deliver.sealed.size = static_cast<pb_size_t>(size);
    std::memset(e.body.relay_deliver.sealed.bytes, static_cast<int>(relay_id), size);
    Send(e);
  }
  size_t Count(pb_size_t tag) const {
    return static_cast<size_t>(std::count_if(received.begin(), received.end(),
                                             [tag](const nodefl_wire_Envelope& e) { return e.which_body == tag; }));
  }

  Drbg drbg;
  tls::TlsCredentials credentials;
  tls::TlsConfig config;
  std::vector<uint8_t> inbound, outbound;
  tls::TlsEndpoint endpoint;
  std::vector<uint8_t> plain;
  std::vector<nodefl_wire_Envelope> received;
  Status read_error;
  uint64_t next_seq = 1;
};

// The device: everything in caller buffers of the sizes the pump suggests.
struct Device {
  explicit Device(TestPki& pki, const PumpOptions& pump_options = PumpOptions())
      : tls_in(kPumpTlsInboundBytes), tls_out(kPumpTlsOutboundBytes), plaintext(kPumpPlaintextBytes),
        frame(kMaxFrame), output(2 * kMaxFrame),
        session(Options(), device::SessionBuffers{ByteSpan(frame), ByteSpan(output)}),
        pump(endpoint, session, ByteSpan(plaintext), pump_options) {
    EXPECT_TRUE(drbg.SeedDeterministic(12).ok());
    EXPECT_TRUE(pki.Load(pki.Device(kDeviceId), &credentials).ok());
    EXPECT_TRUE(config.Init(tls::TlsRole::kClient, credentials, pki.random_function(), &drbg).ok());
    EXPECT_TRUE(endpoint.Init(config, ByteSpan(tls_in), ByteSpan(tls_out), "localhost").ok());
    EXPECT_TRUE(session.AddRole(role).ok());
  }
  static device::SessionOptions Options() {
    device::SessionOptions o;
    o.device_id = kDeviceId;
    return o;
  }

  Drbg drbg;
  tls::TlsCredentials credentials;
  tls::TlsConfig config;
  std::vector<uint8_t> tls_in, tls_out, plaintext, frame, output;
  tls::TlsEndpoint endpoint;
  ReplyRole role;
  device::DeviceSession session;
  DevicePump pump;
};

// Moves at most `chunk` bytes each way per call; returns the number moved.
// Device errors are returned in *device_status (first one wins).
size_t Shuttle(Device& d, Server& s, size_t chunk, uint64_t now, Status* device_status) {
  size_t moved = 0;
  const ConstByteSpan up = d.pump.PendingOutput();
  if (!up.empty()) {
    size_t fed = 0;
    EXPECT_TRUE(s.endpoint.FeedCiphertext(up.first(std::min(chunk, up.size())), &fed).ok());
    const Status st = d.pump.ConsumeOutput(fed, now);
    if (device_status->ok()) *device_status = st;
    moved += fed;
  }
  s.Step();
  const ConstByteSpan down = s.endpoint.PendingCiphertext();
  if (!down.empty()) {
    size_t taken = 0;
    const Status st = d.pump.OnReceived(down.first(std::min(chunk, down.size())), now, &taken);
    if (device_status->ok()) *device_status = st;
    s.endpoint.ConsumeCiphertext(taken);
    moved += taken;
  }
  return moved;
}

// Shuttles until nothing moves any more; returns the device's first error.
Status Settle(Device& d, Server& s, size_t chunk = 1 << 20, uint64_t now = 1000) {
  Status device_status;
  for (int idle = 0, round = 0; idle < 3 && round < 200000; ++round) {
    idle = Shuttle(d, s, chunk, now, &device_status) == 0 ? idle + 1 : 0;
    if (!device_status.ok()) break;
  }
  return device_status;
}

class DevicePumpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(5); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }

  // Handshake, Hello, Welcome: the device is registered.
  static void Register(Device& d, Server& s, size_t chunk = 1 << 20) {
    ASSERT_TRUE(d.pump.Connect(0).ok());
    EXPECT_EQ(d.pump.state(), PumpState::kHandshaking);
    EXPECT_FALSE(d.pump.PendingOutput().empty());  // the ClientHello
    ASSERT_TRUE(Settle(d, s, chunk).ok());
    ASSERT_TRUE(d.pump.handshake_done());
    ASSERT_EQ(s.Count(nodefl_wire_Envelope_hello_tag), 1u);
    s.Welcome();
    ASSERT_TRUE(Settle(d, s, chunk).ok());
    ASSERT_EQ(d.session.state(), SessionState::kReady);
  }

  static TestPki* pki_;
};

TestPki* DevicePumpTest::pki_ = nullptr;

TEST_F(DevicePumpTest, HandshakeHelloAndFramesBothWays) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  EXPECT_EQ(d.pump.state(), PumpState::kOpen);
  const Result<uint32_t> peer = s.endpoint.PeerDeviceId();
  ASSERT_TRUE(peer.ok());
  EXPECT_EQ(*peer, kDeviceId);
  ASSERT_EQ(s.received.size(), 1u);
  EXPECT_EQ(s.received[0].body.hello.device_id, kDeviceId);

  // Server → device: a job start and a delivery; device → server: the
  // role's reply and the session's ack.
  s.JobStart(9);
  s.Deliver(9, 1, 2000);
  ASSERT_TRUE(Settle(d, s).ok());
  EXPECT_EQ(d.role.delivered, 1);
  EXPECT_EQ(d.role.last_delivered_size, 2000u);
  EXPECT_EQ(d.role.last_delivered_first, 1u);
  ASSERT_EQ(s.Count(nodefl_wire_Envelope_relay_send_tag), 1u);
  for (const auto& e : s.received) {
    if (e.which_body != nodefl_wire_Envelope_relay_send_tag) continue;
    EXPECT_EQ(e.job_id, 9u);
    EXPECT_EQ(e.body.relay_send.sealed.size, kReplyBytes);
    EXPECT_EQ(e.body.relay_send.sealed.bytes[kReplyBytes - 1], static_cast<uint8_t>((kReplyBytes - 1) * 13 + 1));
  }
  // Tick sends the pending relay ack (the session acks on Poll).
  ASSERT_TRUE(d.pump.Tick(2000).ok());
  ASSERT_TRUE(Settle(d, s).ok());
  EXPECT_GE(s.Count(nodefl_wire_Envelope_relay_ack_tag), 1u);
}

TEST_F(DevicePumpTest, SurvivesBytesOneAtATime) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s, /*chunk=*/1);
  s.JobStart(4);
  ASSERT_TRUE(Settle(d, s, 1).ok());
  EXPECT_EQ(s.Count(nodefl_wire_Envelope_relay_send_tag), 1u);
  s.Deliver(4, 1, 100);
  ASSERT_TRUE(Settle(d, s, 1).ok());
  EXPECT_EQ(d.role.delivered, 1);
}

TEST_F(DevicePumpTest, CorruptedRecordIsAnErrorNotACrash) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  s.Deliver(1, 1, 200);
  std::vector<uint8_t> record(s.endpoint.PendingCiphertext().begin(), s.endpoint.PendingCiphertext().end());
  s.endpoint.ConsumeCiphertext(record.size());
  ASSERT_GT(record.size(), 40u);
  record[record.size() - 20] ^= 0x01;  // inside the ciphertext: the GCM tag fails
  size_t consumed = 0;
  const Status st = d.pump.OnReceived(record, 5000, &consumed);
  EXPECT_EQ(st, Status::DataLoss());
  EXPECT_EQ(d.pump.state(), PumpState::kFailed);
  EXPECT_EQ(d.pump.failure_layer(), PumpLayer::kTls);
  EXPECT_EQ(d.role.delivered, 0);
  // Sticky: every later call says the same.
  EXPECT_EQ(d.pump.Tick(6000), Status::DataLoss());
  EXPECT_EQ(d.pump.OnReceived(record, 6000, &consumed), Status::DataLoss());
}

TEST_F(DevicePumpTest, SteadyStateDoesNotAllocate) {
  Server s(*pki_);
  Device d(*pki_);
  // The handshake is outside the check: MbedTLS allocates its handshake
  // state and the peer's certificate there (docs/security.md).
  Register(d, s);
  s.JobStart(3);
  s.Deliver(3, 1, 1500);
  const std::vector<uint8_t> down(s.endpoint.PendingCiphertext().begin(), s.endpoint.PendingCiphertext().end());
  s.endpoint.ConsumeCiphertext(down.size());
  size_t consumed = 0;
  Status st;
  NODEFL_EXPECT_NO_HEAP(st = d.pump.OnReceived(down, 1000, &consumed));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(consumed, down.size());
  EXPECT_EQ(d.role.delivered, 1);
  ASSERT_FALSE(d.pump.PendingOutput().empty());  // the role's reply
  const std::vector<uint8_t> up(d.pump.PendingOutput().begin(), d.pump.PendingOutput().end());
  NODEFL_EXPECT_NO_HEAP(st = d.pump.ConsumeOutput(up.size(), 1000));
  ASSERT_TRUE(st.ok());
  NODEFL_EXPECT_NO_HEAP(st = d.pump.Tick(1'500'000));  // heartbeat and ack
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(d.pump.PendingOutput().empty());
  NODEFL_EXPECT_NO_HEAP(st = d.pump.Close("done"));
  ASSERT_TRUE(st.ok());
  size_t fed = 0;
  ASSERT_TRUE(s.endpoint.FeedCiphertext(up, &fed).ok());
  ASSERT_EQ(fed, up.size());
  s.Step();
  EXPECT_EQ(s.Count(nodefl_wire_Envelope_relay_send_tag), 1u);
}

TEST_F(DevicePumpTest, BackPressureStopsTakingInputUntilOutputIsWritten) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  // Each JobStart makes the role write ~3 KiB; nobody writes the device's
  // output, so the device must stop taking the server's bytes (deliveries
  // make the input larger than all the device's input buffers).
  std::vector<uint8_t> down;
  for (uint64_t job = 1; job <= 12; ++job) {
    s.JobStart(job);
    s.Deliver(job, job, 3000);
    down.insert(down.end(), s.endpoint.PendingCiphertext().begin(), s.endpoint.PendingCiphertext().end());
    s.endpoint.ConsumeCiphertext(s.endpoint.PendingCiphertext().size());
  }
  size_t offset = 0, consumed = 0;
  ASSERT_TRUE(d.pump.OnReceived(down, 1000, &consumed).ok());
  offset += consumed;
  ASSERT_LT(offset, down.size());
  // The port's loop: write output, offer the rest again.
  for (int round = 0; round < 1000 && offset < down.size(); ++round) {
    const ConstByteSpan up = d.pump.PendingOutput();
    size_t fed = 0;
    ASSERT_TRUE(s.endpoint.FeedCiphertext(up, &fed).ok());
    ASSERT_TRUE(d.pump.ConsumeOutput(fed, 1000).ok());
    s.Step();
    ASSERT_TRUE(d.pump.OnReceived(ConstByteSpan(down.data() + offset, down.size() - offset), 1000, &consumed).ok());
    offset += consumed;
  }
  ASSERT_EQ(offset, down.size());
  ASSERT_TRUE(Settle(d, s).ok());
  EXPECT_EQ(s.Count(nodefl_wire_Envelope_relay_send_tag), 12u);
  EXPECT_EQ(d.role.delivered, 12);
}

TEST_F(DevicePumpTest, CloseSendsGoodbyeThenCloseNotify) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  ASSERT_TRUE(d.pump.Close("bye").ok());
  ASSERT_TRUE(Settle(d, s).ok());
  EXPECT_EQ(d.pump.state(), PumpState::kClosed);
  ASSERT_FALSE(s.received.empty());
  EXPECT_EQ(s.received.back().which_body, nodefl_wire_Envelope_goodbye_tag);
  EXPECT_STREQ(s.received.back().body.goodbye.reason, "bye");
  EXPECT_TRUE(s.endpoint.peer_closed());
  EXPECT_EQ(d.session.state(), SessionState::kClosed);
}

TEST_F(DevicePumpTest, ServerCloseNotifyClosesThePump) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  ASSERT_TRUE(s.endpoint.CloseNotify().ok());
  ASSERT_TRUE(Settle(d, s).ok());
  EXPECT_EQ(d.pump.state(), PumpState::kClosed);
  EXPECT_TRUE(d.pump.peer_closed());
}

TEST_F(DevicePumpTest, ReconnectResumesTheSession) {
  Server s(*pki_);
  Device d(*pki_);
  Register(d, s);
  s.JobStart(2);
  s.Deliver(2, 5, 10);
  ASSERT_TRUE(Settle(d, s).ok());
  // The transport breaks; a new server connection on the same endpoint.
  ASSERT_TRUE(s.endpoint.Reset().ok());
  s.received.clear();
  s.plain.clear();
  s.next_seq = 1;
  ASSERT_TRUE(d.pump.Connect(10'000).ok());
  ASSERT_TRUE(Settle(d, s).ok());
  ASSERT_EQ(s.received.size(), 1u);
  EXPECT_EQ(s.received[0].which_body, nodefl_wire_Envelope_hello_tag);
  EXPECT_EQ(s.received[0].seq, 1u);
  EXPECT_EQ(s.received[0].body.hello.resume_token.size, 32u);
  EXPECT_EQ(s.received[0].body.hello.last_delivered_relay_id, 5u);
}

TEST_F(DevicePumpTest, HandshakeTimesOutOnTick) {
  Device d(*pki_, PumpOptions{/*handshake_timeout_us=*/1000});
  ASSERT_TRUE(d.pump.Connect(0).ok());
  EXPECT_TRUE(d.pump.Tick(1000).ok());
  EXPECT_EQ(d.pump.Tick(1001), Status::DeadlineExceeded());
  EXPECT_EQ(d.pump.state(), PumpState::kFailed);
  EXPECT_EQ(d.pump.failure_layer(), PumpLayer::kTls);
  // A new connection clears the failure.
  ASSERT_TRUE(d.pump.Connect(2000).ok());
  EXPECT_EQ(d.pump.state(), PumpState::kHandshaking);
}

TEST_F(DevicePumpTest, ReceivingBeforeConnectIsAPreconditionError) {
  Device d(*pki_);
  const uint8_t byte[1] = {0x16};
  size_t consumed = 1;
  EXPECT_EQ(d.pump.OnReceived(byte, 0, &consumed), Status::FailedPrecondition());
  EXPECT_EQ(consumed, 0u);
  EXPECT_TRUE(d.pump.PendingOutput().empty());
}

}  // namespace
}  // namespace nodefl::client
