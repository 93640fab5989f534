// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceSession against a scripted server: the test encodes the server's
// envelopes with the real wire codec and reads back what the device wrote.
#include "nodefl/device/device_session.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <vector>

#include "heap_counter.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "scripted_server.h"

namespace nodefl::device {
namespace {

using nodefl::testing::ScriptedServer;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

// This file's server asks for heartbeats every second and an idle timeout of
// five, and runs neighbour echo jobs.
ScriptedServer::Options ServerOptions() {
  ScriptedServer::Options o;
  o.job_kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
  o.resume_token_fill = 0xAB;
  o.heartbeat_ms = 1000;
  o.idle_ms = 5000;
  return o;
}

// Records what the session hands it; sends one RelaySend per JobStart
// (and, with `upload`, a JobData record for the server after it).
class RecordingRole final : public Role {
 public:
  // Capacity reserved up front so that recording never allocates inside a
  // NODEFL_EXPECT_NO_HEAP block (the session is what is being measured).
  RecordingRole() {
    seen.reserve(64);
    relay_ids.reserve(64);
  }
  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO; }
  Status OnMessage(const nodefl_wire_Envelope& m, DeviceSession& session) override {
    seen.push_back(m.which_body);
    if (m.which_body == nodefl_wire_Envelope_relay_deliver_tag) relay_ids.push_back(m.body.relay_deliver.relay_id);
    if (m.which_body == nodefl_wire_Envelope_job_start_tag) {
      nodefl_wire_Envelope& out = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, m.job_id, m.round);
      out.body.relay_send.dst = 5;
      out.body.relay_send.sealed.size = 3;
      NODEFL_TRY(session.Send(out));
      if (upload) {
        nodefl_wire_Envelope& record = session.NewMessage(nodefl_wire_Envelope_job_data_tag, m.job_id, m.round);
        record.body.job_data.kind = 70 + static_cast<uint32_t>(m.job_id);
        record.body.job_data.data.size = 2;
        record.body.job_data.data.bytes[0] = 0xDA;
        record.body.job_data.data.bytes[1] = static_cast<uint8_t>(m.job_id);
        return session.Send(record);
      }
    }
    return Status::Ok();
  }
  bool upload = false;
  Status OnPoll(uint64_t, DeviceSession&) override {
    ++polls;
    return Status::Ok();
  }
  std::vector<pb_size_t> seen;
  std::vector<uint64_t> relay_ids;
  int polls = 0;
};

// A LogSink that keeps every line in fixed storage, so that capturing
// allocates nothing inside NODEFL_EXPECT_NO_HEAP.
struct CapturedLog {
  static constexpr size_t kLines = 16;
  char lines[kLines][160] = {};
  LogLevel levels[kLines] = {};
  size_t count = 0;

  static void Write(void* context, LogLevel level, const char* line) {
    auto* self = static_cast<CapturedLog*>(context);
    if (self->count == kLines) return;
    std::snprintf(self->lines[self->count], sizeof(self->lines[0]), "%s", line);
    self->levels[self->count++] = level;
  }
  LogSink sink(LogLevel min_level = LogLevel::kDebug) {
    LogSink s;
    s.write = &Write;
    s.context = this;
    s.min_level = min_level;
    return s;
  }
  // Index of the first line containing `text`, or -1.
  int Find(const char* text) const {
    for (size_t i = 0; i < count; ++i) {
      if (std::strstr(lines[i], text) != nullptr) return static_cast<int>(i);
    }
    return -1;
  }
};

struct Fixture {
  explicit Fixture(size_t output_frames = 4, uint32_t ack_every = 2, LogSink log = {}, size_t unacked_bytes = 0)
      : frame(kMaxFrame), output(output_frames * kMaxFrame), unacked(unacked_bytes),
        session(Options(ack_every, log),
                SessionBuffers{Span<uint8_t>(frame), Span<uint8_t>(output), Span<uint8_t>(unacked)}) {
    EXPECT_TRUE(session.AddRole(role).ok());
  }
  static SessionOptions Options(uint32_t ack_every, LogSink log) {
    SessionOptions o;
    o.device_id = 42;
    o.ack_every = ack_every;
    o.welcome_timeout_us = 1'000'000;
    o.log = log;
    return o;
  }
  Status Feed(const std::vector<uint8_t>& bytes, uint64_t now = 0) {
    size_t consumed = 0;
    const Status s = session.OnReceived(bytes, now, &consumed);
    if (s.ok()) {
      EXPECT_EQ(consumed, bytes.size());
    }
    return s;
  }
  void Register() {
    ASSERT_TRUE(session.Start(0).ok());
    ScriptedServer::Read(session);
    ASSERT_TRUE(Feed(server.Welcome()).ok());
    ASSERT_EQ(session.state(), SessionState::kReady);
  }
  std::vector<uint8_t> frame, output, unacked;
  RecordingRole role;
  DeviceSession session;
  ScriptedServer server{ServerOptions()};
};

TEST(DeviceSessionTest, HelloThenWelcomeRegisters) {
  Fixture f;
  ASSERT_TRUE(f.session.Start(0).ok());
  auto sent = ScriptedServer::Read(f.session);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].which_body, nodefl_wire_Envelope_hello_tag);
  EXPECT_EQ(sent[0].body.hello.device_id, 42u);
  EXPECT_EQ(sent[0].body.hello.resume_token.size, 0u);
  EXPECT_EQ(sent[0].seq, 1u);
  EXPECT_EQ(f.session.state(), SessionState::kAwaitingWelcome);
  ASSERT_TRUE(f.Feed(f.server.Welcome()).ok());
  EXPECT_EQ(f.session.state(), SessionState::kReady);
}

TEST(DeviceSessionTest, JobMessagesReachTheRoleAndItsReplyIsSent) {
  Fixture f;
  f.Register();
  ASSERT_TRUE(f.Feed(f.server.JobStart(9)).ok());
  ASSERT_EQ(f.role.seen.size(), 1u);
  auto sent = ScriptedServer::Read(f.session);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].which_body, nodefl_wire_Envelope_relay_send_tag);
  EXPECT_EQ(sent[0].job_id, 9u);
  EXPECT_EQ(sent[0].seq, 2u);  // after the Hello
}

TEST(DeviceSessionTest, RelayDeliveriesAreAckedAndDuplicatesSkippedAfterResume) {
  Fixture f(/*output_frames=*/4, /*ack_every=*/2);
  f.Register();
  ASSERT_TRUE(f.Feed(f.server.JobStart(9)).ok());
  ScriptedServer::Read(f.session);
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 1)).ok());
  EXPECT_TRUE(ScriptedServer::Read(f.session).empty());  // ack_every = 2
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 2)).ok());
  auto acks = ScriptedServer::Read(f.session);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].body.relay_ack.relay_id, 2u);
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 3)).ok());
  ASSERT_TRUE(f.session.Poll(10).ok());  // Poll flushes the pending ack
  acks = ScriptedServer::Read(f.session);
  ASSERT_FALSE(acks.empty());
  EXPECT_EQ(acks[0].body.relay_ack.relay_id, 3u);

  // The transport breaks; the device resumes with its token and the server
  // re-delivers 3 (ack lost in flight) and then 4.
  ASSERT_TRUE(f.session.Reconnect(20).ok());
  auto hello = ScriptedServer::Read(f.session);
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(hello[0].seq, 1u);
  EXPECT_EQ(hello[0].body.hello.resume_token.size, 32u);
  EXPECT_EQ(hello[0].body.hello.last_delivered_relay_id, 3u);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(f.server.Welcome(/*resumed=*/true)).ok());
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 3)).ok());
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 4)).ok());
  EXPECT_EQ(f.role.relay_ids, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(f.session.counters().relay_duplicates, 1u);
}

TEST(DeviceSessionTest, FreshServerSessionResetsRelayNumbering) {
  Fixture f;
  f.Register();
  ASSERT_TRUE(f.Feed(f.server.JobStart(9)).ok());
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 1)).ok());
  ASSERT_TRUE(f.session.Reconnect(5).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(f.server.Welcome(/*resumed=*/false)).ok());
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 1)).ok());  // numbering restarted: not a duplicate
  EXPECT_EQ(f.role.relay_ids, (std::vector<uint64_t>{1, 1}));
}

// Kept sends (SessionBuffers::unacked): numbered, forgotten when the server
// acknowledges them, written again after a resume past what Welcome says
// the server has, forgotten when the server starts a fresh session.
std::vector<uint8_t> SendAck(ScriptedServer& server, uint64_t send_id) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_relay_send_ack_tag;
  e.body.relay_send_ack.send_id = send_id;
  return server.Frame(e);
}

std::vector<uint8_t> ResumedWelcome(ScriptedServer& server, uint64_t last_send_id) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_welcome_tag;
  std::memset(e.body.welcome.resume_token.bytes, 0xAB, 32);
  e.body.welcome.resume_token.size = 32;
  e.body.welcome.heartbeat_interval_ms = 1000;
  e.body.welcome.idle_timeout_ms = 5000;
  e.body.welcome.resumed = true;
  e.body.welcome.last_relay_send_id = last_send_id;
  return server.Frame(e);
}

TEST(DeviceSessionTest, KeptRelaySendsAreResentAfterAResumeUntilAcknowledged) {
  Fixture f(4, 2, {}, 4 * UnackedSends::kMaxEntryBytes);
  f.Register();
  for (uint64_t job = 1; job <= 3; ++job) ASSERT_TRUE(f.Feed(f.server.JobStart(job)).ok());
  auto sent = ScriptedServer::Read(f.session);
  ASSERT_EQ(sent.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sent[i].which_body, nodefl_wire_Envelope_relay_send_tag);
    EXPECT_EQ(sent[i].body.relay_send.send_id, i + 1);
  }
  EXPECT_EQ(f.session.counters().sends_kept, 3u);
  ASSERT_TRUE(f.Feed(SendAck(f.server, 1)).ok());

  // The connection breaks; the server had accepted sends 1 and 2 (the ack
  // of 2 was lost with the connection): only 3 is written again, on the
  // new connection's sequence numbers, with its job, round and payload.
  ASSERT_TRUE(f.session.Reconnect(10).ok());
  auto hello = ScriptedServer::Read(f.session);
  ASSERT_EQ(hello.size(), 1u);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(ResumedWelcome(f.server, 2)).ok());
  auto resent = ScriptedServer::Read(f.session);
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].which_body, nodefl_wire_Envelope_relay_send_tag);
  EXPECT_EQ(resent[0].seq, 2u);
  EXPECT_EQ(resent[0].body.relay_send.send_id, 3u);
  EXPECT_EQ(resent[0].job_id, sent[2].job_id);
  EXPECT_EQ(resent[0].round, sent[2].round);
  EXPECT_EQ(resent[0].body.relay_send.dst, 5u);
  EXPECT_EQ(resent[0].body.relay_send.sealed.size, 3u);
  EXPECT_EQ(f.session.counters().sends_resent, 1u);

  // A new send continues the numbering.
  ASSERT_TRUE(f.Feed(f.server.JobStart(4)).ok());
  auto next = ScriptedServer::Read(f.session);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].body.relay_send.send_id, 4u);

  // Unacknowledged 3 and 4, and the server starts afresh: it cannot tell
  // which it routed, so the device forgets them rather than risk a double.
  ASSERT_TRUE(f.session.Reconnect(20).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(f.server.Welcome(/*resumed=*/false)).ok());
  EXPECT_TRUE(ScriptedServer::Read(f.session).empty());
  EXPECT_EQ(f.session.counters().sends_forgotten, 2u);
}

TEST(DeviceSessionTest, SendsToWriteAgainGoOutBeforeMoreInputIsTaken) {
  // More kept sends than the output holds: after a resume they fill it, and
  // a delivery behind the Welcome waits until the app has written them
  // out (roles cannot send behind them; taking input meanwhile would only
  // pile work up in the roles).
  constexpr size_t kSends = kMaxFrame / 8;
  Fixture f(/*output_frames=*/2, /*ack_every=*/1000, {},
            kSends * (UnackedSends::kHeaderBytes + 3) + UnackedSends::kMaxEntryBytes);
  f.Register();
  for (uint64_t job = 1; job <= kSends; ++job) {
    ASSERT_TRUE(f.Feed(f.server.JobStart(job)).ok());
    ScriptedServer::Read(f.session);
  }
  ASSERT_EQ(f.session.counters().sends_kept, kSends);
  ASSERT_TRUE(f.session.Reconnect(10).ok());
  ScriptedServer::Read(f.session);  // Hello
  f.server.Restart();
  std::vector<uint8_t> input = ResumedWelcome(f.server, 0);
  const std::vector<uint8_t> delivery = f.server.Deliver(kSends, 1);  // for the latest job
  input.insert(input.end(), delivery.begin(), delivery.end());
  f.role.seen.clear();
  size_t consumed = 0;
  ASSERT_TRUE(f.session.OnReceived(input, 20, &consumed).ok());
  EXPECT_TRUE(f.role.seen.empty());  // the delivery waits in the frame decoder
  EXPECT_FALSE(f.session.CanSend());
  size_t resent = ScriptedServer::Read(f.session).size();
  EXPECT_GT(resent, 0u);
  EXPECT_LT(resent, kSends);
  // Written out in turns; the delivery reaches the role once none waits.
  for (int turn = 0; turn < 100 && f.role.seen.empty(); ++turn) {
    size_t more = 0;
    ASSERT_TRUE(f.session.OnReceived(Span<const uint8_t>(input).subspan(consumed), 20, &more).ok());
    consumed += more;
    if (f.role.seen.empty()) {
      EXPECT_LT(f.session.counters().sends_resent, kSends);
    }
    resent += ScriptedServer::Read(f.session).size();
  }
  EXPECT_EQ(consumed, input.size());
  EXPECT_EQ(f.role.seen, (std::vector<pb_size_t>{nodefl_wire_Envelope_relay_deliver_tag}));
  EXPECT_EQ(f.session.counters().sends_resent, kSends);
  EXPECT_GE(resent, kSends);  // and an ack
}

TEST(DeviceSessionTest, KeptUploadsShareTheNumberingAndAreResentAsJobData) {
  Fixture f(4, 2, {}, 6 * UnackedSends::kMaxEntryBytes);
  f.role.upload = true;
  f.Register();
  for (uint64_t job = 1; job <= 2; ++job) ASSERT_TRUE(f.Feed(f.server.JobStart(job)).ok());
  auto sent = ScriptedServer::Read(f.session);
  ASSERT_EQ(sent.size(), 4u);
  // relay 1, upload 2, relay 3, upload 4: one numbering.
  for (uint64_t i = 0; i < 4; ++i) {
    const bool upload = i % 2 == 1;
    ASSERT_EQ(sent[i].which_body, upload ? nodefl_wire_Envelope_job_data_tag : nodefl_wire_Envelope_relay_send_tag);
    EXPECT_EQ(upload ? sent[i].body.job_data.send_id : sent[i].body.relay_send.send_id, i + 1);
  }
  EXPECT_EQ(f.session.counters().sends_kept, 4u);

  // The server took 1 and 2 before the connection broke (its ack was lost):
  // relay 3 and upload 4 are written again, the upload as the same record.
  ASSERT_TRUE(f.session.Reconnect(10).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(ResumedWelcome(f.server, 2)).ok());
  auto resent = ScriptedServer::Read(f.session);
  ASSERT_EQ(resent.size(), 2u);
  EXPECT_EQ(resent[0].which_body, nodefl_wire_Envelope_relay_send_tag);
  EXPECT_EQ(resent[0].body.relay_send.send_id, 3u);
  ASSERT_EQ(resent[1].which_body, nodefl_wire_Envelope_job_data_tag);
  const nodefl_wire_JobData& record = resent[1].body.job_data;
  EXPECT_EQ(record.send_id, 4u);
  EXPECT_EQ(resent[1].job_id, 2u);
  EXPECT_EQ(resent[1].round, sent[3].round);
  EXPECT_EQ(record.kind, 72u);
  ASSERT_EQ(record.data.size, 2u);
  EXPECT_EQ(record.data.bytes[0], 0xDA);
  EXPECT_EQ(record.data.bytes[1], 2);
  EXPECT_EQ(f.session.counters().sends_resent, 2u);

  // Acknowledged through 4: nothing is written again on the next resume.
  ASSERT_TRUE(f.Feed(SendAck(f.server, 4)).ok());
  ASSERT_TRUE(f.session.Reconnect(20).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(ResumedWelcome(f.server, 4)).ok());
  EXPECT_TRUE(ScriptedServer::Read(f.session).empty());
}

// A job record from the server, numbered per job (JobData.send_id).
std::vector<uint8_t> Record(ScriptedServer& server, uint64_t job, uint64_t record_id) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_job_data_tag;
  e.job_id = job;
  e.round = 1;
  e.body.job_data.kind = 5;
  e.body.job_data.send_id = record_id;
  e.body.job_data.data.size = 1;
  e.body.job_data.data.bytes[0] = static_cast<uint8_t>(record_id);
  return server.Frame(e);
}

TEST(DeviceSessionTest, JobRecordsWrittenAgainAfterAReconnectReachTheRoleOnce) {
  Fixture f;
  f.Register();
  ASSERT_TRUE(f.Feed(f.server.JobStart(1)).ok());
  ASSERT_TRUE(f.Feed(f.server.JobStart(2)).ok());
  ScriptedServer::Read(f.session);
  ASSERT_TRUE(f.Feed(Record(f.server, 1, 1)).ok());
  ASSERT_TRUE(f.Feed(Record(f.server, 1, 2)).ok());
  ASSERT_TRUE(f.Feed(Record(f.server, 2, 1)).ok()) << "each job numbers its own records";
  const size_t records_before = std::count(f.role.seen.begin(), f.role.seen.end(), nodefl_wire_Envelope_job_data_tag);
  EXPECT_EQ(records_before, 3u);

  // A new connection: the server writes job 1's round again, its start and
  // records 1-3 (3 had been lost with the old connection).
  ASSERT_TRUE(f.session.Reconnect(10).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(ResumedWelcome(f.server, 0)).ok());
  ASSERT_TRUE(f.Feed(f.server.JobStart(1)).ok());
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(f.Feed(Record(f.server, 1, id)).ok());
  EXPECT_EQ(std::count(f.role.seen.begin(), f.role.seen.end(), nodefl_wire_Envelope_job_data_tag), 4)
      << "only record 3 is new";
  EXPECT_EQ(f.session.counters().records_repeated, 2u);
  // Unnumbered records (a server that numbers none) always go through.
  ASSERT_TRUE(f.Feed(Record(f.server, 1, 0)).ok());
  ASSERT_TRUE(f.Feed(Record(f.server, 1, 0)).ok());
  EXPECT_EQ(std::count(f.role.seen.begin(), f.role.seen.end(), nodefl_wire_Envelope_job_data_tag), 6);
}

TEST(DeviceSessionTest, KeptSendsAreTheCreditRolesWaitFor) {
  // Room to keep one largest send: after a small one, roles must wait for
  // the acknowledgement (CanSend), while acks still get through.
  Fixture f(4, 2, {}, UnackedSends::kMaxEntryBytes);
  f.Register();
  EXPECT_TRUE(f.session.CanSend());
  ASSERT_TRUE(f.Feed(f.server.JobStart(1)).ok());
  ScriptedServer::Read(f.session);
  EXPECT_FALSE(f.session.CanSend());
  ASSERT_TRUE(f.Feed(SendAck(f.server, 1)).ok());
  EXPECT_TRUE(f.session.CanSend());
  // A role that sends anyway (this one answers every JobStart): what fits
  // is kept and numbered in order; the rest goes out unnumbered instead of
  // failing the role.
  constexpr uint64_t kSends = 200;
  constexpr uint64_t kFit = UnackedSends::kMaxEntryBytes / (UnackedSends::kHeaderBytes + 3);
  uint64_t numbered = 0, unnumbered = 0;
  for (uint64_t i = 0; i < kSends; ++i) {
    ASSERT_TRUE(f.Feed(f.server.JobStart(2 + i)).ok());
    for (const auto& m : ScriptedServer::Read(f.session)) {
      ASSERT_EQ(m.which_body, nodefl_wire_Envelope_relay_send_tag);
      if (m.body.relay_send.send_id == 0) {
        ++unnumbered;
      } else {
        EXPECT_EQ(m.body.relay_send.send_id, 2 + numbered);
        ++numbered;
      }
    }
  }
  EXPECT_EQ(numbered, kFit);
  EXPECT_EQ(unnumbered, kSends - kFit);
  EXPECT_EQ(f.session.counters().sends_unkept, kSends - kFit);
}

TEST(DeviceSessionTest, AcknowledgingASendNeverMadeIsDataLoss) {
  Fixture f(4, 2, {}, 2 * UnackedSends::kMaxEntryBytes);
  f.Register();
  ASSERT_TRUE(f.Feed(f.server.JobStart(1)).ok());
  EXPECT_EQ(f.Feed(SendAck(f.server, 2)), Status::DataLoss());
  EXPECT_EQ(f.session.state(), SessionState::kClosed);
}

TEST(DeviceSessionTest, ProtocolViolationsCloseWithAReason) {
  {
    Fixture f;
    ASSERT_TRUE(f.session.Start(0).ok());
    EXPECT_EQ(f.Feed(f.server.JobStart(1)), Status::FailedPrecondition());  // before Welcome
    EXPECT_EQ(f.session.state(), SessionState::kClosed);
  }
  {
    Fixture f;
    f.Register();
    nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
    e.which_body = nodefl_wire_Envelope_heartbeat_tag;
    e.seq = 7;  // expected 2
    EXPECT_EQ(f.Feed(f.server.Frame(e)), Status::DataLoss());
    EXPECT_STRNE(f.session.last_error(), "");
  }
  {
    Fixture f;
    f.Register();
    EXPECT_EQ(f.Feed(f.server.JobStartOfKind(1, /*kind=*/77)), Status::Unimplemented());
  }
  {
    Fixture f;
    f.Register();
    EXPECT_EQ(f.Feed(f.server.Deliver(99, 0)), Status::DataLoss());  // relay id 0
  }
  {
    Fixture f;
    f.Register();
    const std::vector<uint8_t> garbage = {0, 0, 0, 3, 0xFF, 0xFF, 0xFF};
    EXPECT_FALSE(f.Feed(garbage).ok());
    EXPECT_EQ(f.session.state(), SessionState::kClosed);
  }
  {
    Fixture f;
    f.Register();
    const std::vector<uint8_t> oversize = {0, 1, 0, 0};  // 65536-byte frame announced
    EXPECT_EQ(f.Feed(oversize), Status::ResourceExhausted());
  }
}

TEST(DeviceSessionTest, ServerErrorIsReportedWithItsCode) {
  Fixture f;
  f.Register();
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  protocol::InitError(&e, StatusCode::kPermissionDenied, "device id does not match certificate", 0, 0);
  EXPECT_EQ(f.Feed(f.server.Frame(e)), Status::PermissionDenied());
  EXPECT_STREQ(f.session.last_error(), "device id does not match certificate");
}

TEST(DeviceSessionTest, HeartbeatsAndTimeouts) {
  Fixture f;
  ASSERT_TRUE(f.session.Start(0).ok());
  EXPECT_TRUE(f.session.Poll(999'999).ok());
  EXPECT_EQ(f.session.Poll(1'000'001), Status::DeadlineExceeded());  // no Welcome

  Fixture g;
  g.Register();  // heartbeat 1 s, idle 5 s
  ScriptedServer::Read(g.session);
  ASSERT_TRUE(g.session.Poll(500'000).ok());
  EXPECT_TRUE(ScriptedServer::Read(g.session).empty());
  ASSERT_TRUE(g.session.Poll(1'000'000).ok());
  auto beats = ScriptedServer::Read(g.session);
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].which_body, nodefl_wire_Envelope_heartbeat_tag);
  EXPECT_GT(g.role.polls, 0);
  EXPECT_EQ(g.session.Poll(5'000'001), Status::DeadlineExceeded());  // server silent
}

TEST(DeviceSessionTest, StopsReadingWhenOutputIsFull) {
  Fixture f(/*output_frames=*/2, /*ack_every=*/1000);
  f.Register();
  // Fill the output until there is no room for another maximum frame.
  int filler = 0;
  while (f.session.CanSend()) {
    nodefl_wire_Envelope& m = f.session.NewMessage(nodefl_wire_Envelope_heartbeat_tag);
    ASSERT_TRUE(f.session.Send(m).ok());
    ++filler;
  }
  ASSERT_GT(filler, 0);
  // Each JobStart makes the role send a frame, so none may be handled now.
  std::vector<uint8_t> both = f.server.JobStart(1);
  const std::vector<uint8_t> second = f.server.JobStart(2);
  both.insert(both.end(), second.begin(), second.end());
  size_t consumed = 0;
  ASSERT_TRUE(f.session.OnReceived(both, 0, &consumed).ok());
  EXPECT_TRUE(f.role.seen.empty());
  EXPECT_LT(consumed, both.size());
  // Once the app has written the output out, the rest goes through.
  EXPECT_EQ(ScriptedServer::Read(f.session).size(), static_cast<size_t>(filler));
  size_t rest = 0;
  ASSERT_TRUE(f.session.OnReceived(Span<const uint8_t>(both).subspan(consumed), 0, &rest).ok());
  EXPECT_EQ(consumed + rest, both.size());
  EXPECT_EQ(f.role.seen.size(), 2u);
  EXPECT_EQ(ScriptedServer::Read(f.session).size(), 2u);
}

TEST(DeviceSessionTest, CloseSendsGoodbyeAndClosesAfterFlush) {
  Fixture f;
  f.Register();
  ASSERT_TRUE(f.session.Close("app shutting down").ok());
  auto bye = ScriptedServer::Read(f.session);
  ASSERT_EQ(bye.size(), 1u);
  EXPECT_EQ(bye[0].which_body, nodefl_wire_Envelope_goodbye_tag);
  EXPECT_EQ(f.session.state(), SessionState::kClosed);
}

TEST(DeviceSessionTest, SessionNeverAllocates) {
  Fixture f(4, 1);
  const auto welcome = f.server.Welcome();
  const auto job = f.server.JobStart(4);
  const auto deliver = f.server.Deliver(4, 1);
  NODEFL_EXPECT_NO_HEAP({
    f.session.Start(0).IgnoreError();
    f.session.ConsumeOutput(f.session.PendingOutput().size());
    size_t consumed = 0;
    f.session.OnReceived(welcome, 0, &consumed).IgnoreError();
    f.session.OnReceived(job, 0, &consumed).IgnoreError();
    f.session.OnReceived(deliver, 0, &consumed).IgnoreError();
    f.session.Poll(2'000'000).IgnoreError();
  });
  EXPECT_EQ(f.role.relay_ids.size(), 1u);
}

TEST(DeviceSessionLogTest, ServerErrorIsLoggedWithItsCodeAndText) {
  CapturedLog log;
  Fixture f(4, 2, log.sink());
  f.Register();
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  protocol::InitError(&e, StatusCode::kPermissionDenied, "device id does not match certificate", 0, 0);
  const std::vector<uint8_t> error = f.server.Frame(e);
  Status fed;
  NODEFL_EXPECT_NO_HEAP({ fed = f.Feed(error); });
  EXPECT_EQ(fed, Status::PermissionDenied());
  const int at = log.Find("server sent Error");
  ASSERT_GE(at, 0);
  EXPECT_EQ(log.levels[at], LogLevel::kError);
  EXPECT_NE(std::strstr(log.lines[at], "device 42"), nullptr) << log.lines[at];
  EXPECT_NE(std::strstr(log.lines[at], "PERMISSION_DENIED"), nullptr) << log.lines[at];
  EXPECT_NE(std::strstr(log.lines[at], "device id does not match certificate"), nullptr) << log.lines[at];
}

TEST(DeviceSessionLogTest, ProtocolViolationSaysWhyTheSessionClosed) {
  CapturedLog log;
  Fixture f(4, 2, log.sink());
  f.Register();
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_heartbeat_tag;
  e.seq = 7;  // expected 2
  EXPECT_EQ(f.Feed(f.server.Frame(e)), Status::DataLoss());
  const int at = log.Find("session closed (DATA_LOSS): out-of-sequence message from server");
  ASSERT_GE(at, 0) << (log.count > 0 ? log.lines[log.count - 1] : "no lines");
  EXPECT_EQ(log.levels[at], LogLevel::kError);
}

TEST(DeviceSessionLogTest, ResumeAcceptedAndRefusedAreLogged) {
  CapturedLog log;
  Fixture f(4, 2, log.sink());
  f.Register();
  EXPECT_GE(log.Find("device 42: registered"), 0);
  EXPECT_LT(log.Find("resume"), 0);  // first contact is no resume

  ASSERT_TRUE(f.Feed(f.server.JobStart(9)).ok());
  ASSERT_TRUE(f.Feed(f.server.Deliver(9, 1)).ok());
  ASSERT_TRUE(f.session.Reconnect(10).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  const std::vector<uint8_t> resumed = f.server.Welcome(/*resumed=*/true);
  Status fed;
  NODEFL_EXPECT_NO_HEAP({ fed = f.Feed(resumed); });
  ASSERT_TRUE(fed.ok());
  const int accepted = log.Find("resume accepted");
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(log.levels[accepted], LogLevel::kInfo);
  EXPECT_NE(std::strstr(log.lines[accepted], "after id 1"), nullptr) << log.lines[accepted];

  ASSERT_TRUE(f.session.Reconnect(20).ok());
  ScriptedServer::Read(f.session);
  f.server.Restart();
  ASSERT_TRUE(f.Feed(f.server.Welcome(/*resumed=*/false)).ok());
  const int refused = log.Find("resume refused");
  ASSERT_GE(refused, 0);
  EXPECT_EQ(log.levels[refused], LogLevel::kWarning);
}

TEST(DeviceSessionLogTest, RefusedReleaseInAReportIsLogged) {
  CapturedLog log;
  Fixture f(4, 2, log.sink(LogLevel::kWarning));
  f.Register();
  EXPECT_EQ(log.count, 0u);  // below the sink's level: registering is quiet
  nodefl_wire_Envelope& report = f.session.NewMessage(nodefl_wire_Envelope_job_report_tag, 9, 2);
  report.body.job_report.code = static_cast<uint32_t>(StatusCode::kPermissionDenied);
  ASSERT_TRUE(f.session.Send(report).ok());
  ASSERT_EQ(log.count, 1u);
  EXPECT_NE(std::strstr(log.lines[0], "job 9 round 2: release refused, privacy budget exhausted"), nullptr)
      << log.lines[0];
  nodefl_wire_Envelope& ok = f.session.NewMessage(nodefl_wire_Envelope_job_report_tag, 9, 3);
  ASSERT_TRUE(f.session.Send(ok).ok());
  EXPECT_EQ(log.count, 1u);  // an OK report says nothing
}

TEST(DeviceSessionLogTest, WithoutASinkTheSessionStillClosesWithAReason) {
  Fixture f;  // default options: no sink
  f.Register();
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_welcome_tag;  // a second Welcome: protocol error
  EXPECT_EQ(f.Feed(f.server.Frame(e)), Status::FailedPrecondition());
  EXPECT_STREQ(f.session.last_error(), "unexpected Welcome");
}

}  // namespace
}  // namespace nodefl::device
