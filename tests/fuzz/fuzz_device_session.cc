// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceSession (device/device_session.h) driven the way an app drives it,
// with the fuzz input as the plaintext the server sends: Start(), then the
// stream offered to OnReceived() in pieces whose sizes come from the input,
// the output drained (all of it, or a prefix: a slow TLS writer) and Poll()
// called with an advancing clock. Two roles run behind it: the real FedWalk
// HCT role (chunked artefacts, JobStart parameters, uploads; it needs no
// credentials) and a small probe role that answers a JobStart with one
// frame, fills the output from Poll until Send() refuses, and refuses
// JobData (a role's error). Checked:
//   * no crash or sanitizer report; the caller's frame and output buffers
//     sit at the end of their arrays, so one byte past them is caught;
//   * OnReceived's `consumed` never exceeds the piece; an OK return that
//     leaves input unconsumed only happens when the output lacks room for
//     a maximum frame (the backpressure contract);
//   * an error the session detects (malformed frame, bad seq, Error or
//     Goodbye from the server, a timeout) closes it, and a closed session
//     stays closed: OnReceived refuses with nothing consumed, Poll writes
//     nothing. A role's own error is passed up with the session left as is
//     (role.h: the app then ends the connection); the harness then does
//     what an app does: it stops, or calls Reconnect() when byte 0 says so;
//   * the output never exceeds its buffer, and what the device writes is a
//     stream of well-formed frames with decodable envelopes of the current
//     version, seq 1, 2, ... per connection, opening with its Hello.
// Input: byte 0 flags (bits 0-1: output buffer of 2..5 maximum frames; bit
// 2: a smaller max_frame_payload; bit 3: reconnect after a close; bits 4-5:
// memory to keep 0..3 largest relay sends until acknowledged), byte 1
// seeds the piece sizes, byte 2 ack_every and the smaller payload limit,
// byte 3 seeds the clock; the rest is the server's byte stream (the seeds
// open it with a Welcome frame so mutations start past registration).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "nodefl/device/device_session.h"
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/protocol/limits.h"
#include "nodefl/random/drbg.h"

namespace {

using nodefl::ByteSpan;
using nodefl::ConstByteSpan;
using nodefl::Span;
using nodefl::Status;
using nodefl::StatusCode;
namespace device = nodefl::device;
namespace fw = nodefl::fedwalk;
namespace protocol = nodefl::protocol;

void Check(bool ok) {
  if (!ok) std::abort();
}

constexpr uint32_t kDeviceId = 3;
constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

// Set whenever a role returns an error, so the harness can tell a role's
// refusal (session left open by design) from one the session detected.
bool role_failed = false;

Status Note(Status s) {
  if (!s.ok()) role_failed = true;
  return s;
}

// Forwards to the FedWalk HCT role (final) and notes its errors.
class HctProbe final : public device::Role {
 public:
  explicit HctProbe(fw::FedWalkHctRole& role) : role_(role) {}
  nodefl_wire_JobKind kind() const override { return role_.kind(); }
  Status OnMessage(const nodefl_wire_Envelope& m, device::DeviceSession& s) override {
    return Note(role_.OnMessage(m, s));
  }
  Status OnPoll(uint64_t now_us, device::DeviceSession& s) override { return Note(role_.OnPoll(now_us, s)); }
  void OnSessionRestart(bool resumed) override { role_.OnSessionRestart(resumed); }

 private:
  fw::FedWalkHctRole& role_;
};

// A neighbour-echo stand-in without credentials: one frame per JobStart
// from OnMessage (the one a handler may send), a burst from OnPoll until
// Send() refuses, and an error for JobData.
class EchoProbe final : public device::Role {
 public:
  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO; }
  Status OnMessage(const nodefl_wire_Envelope& m, device::DeviceSession& s) override {
    if (m.which_body == nodefl_wire_Envelope_job_data_tag) return Note(Status::InvalidArgument());
    if (m.which_body != nodefl_wire_Envelope_job_start_tag) return Status::Ok();
    job_ = m.job_id;
    burst_ = m.round % 8;
    return Note(SendOne(s));
  }
  Status OnPoll(uint64_t, device::DeviceSession& s) override {
    for (; burst_ > 0; --burst_) {
      const Status sent = SendOne(s);
      if (sent.code() == StatusCode::kResourceExhausted) return Status::Ok();  // more room next Poll
      if (!sent.ok()) return Note(sent);
    }
    return Status::Ok();
  }

 private:
  Status SendOne(device::DeviceSession& s) {
    nodefl_wire_Envelope& out = s.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_, 2);
    out.body.relay_send.dst = 5;
    // Large enough that a few fill an output of two maximum frames.
    out.body.relay_send.sealed.size = 3000;
    return s.Send(out);
  }
  uint64_t job_ = 0;
  uint32_t burst_ = 0;
};

// Formats every line (the session's log texts include server-sent strings)
// and reads it through, so a bad format or unterminated text shows.
void DiscardLine(void* context, nodefl::LogLevel, const char* line) {
  *static_cast<size_t*>(context) += std::strlen(line);
}

// Reads back what the device wrote, as the server would.
class OutputReader {
 public:
  void Restart() {
    Check(decoder_.Init(ByteSpan(storage_, sizeof storage_), protocol::kMaxFramePayloadBytes).ok());
    next_seq_ = 1;
  }
  void Read(ConstByteSpan bytes) {
    while (!bytes.empty()) {
      size_t taken = 0;
      Check(decoder_.Feed(bytes, &taken).ok());
      Check(taken <= bytes.size());
      bytes = bytes.subspan(taken);
      if (!decoder_.has_frame()) {
        Check(bytes.empty());
        continue;
      }
      Check(protocol::DecodeEnvelope(decoder_.frame(), &envelope_).ok());
      Check(envelope_.version == protocol::kProtocolVersion && envelope_.seq == next_seq_);
      if (next_seq_ == 1) {
        Check(envelope_.which_body == nodefl_wire_Envelope_hello_tag && envelope_.body.hello.device_id == kDeviceId);
      }
      ++next_seq_;
      decoder_.PopFrame();
    }
  }

 private:
  uint8_t storage_[protocol::FrameDecoder::StorageBytes()];
  protocol::FrameDecoder decoder_;
  nodefl_wire_Envelope envelope_;
  uint64_t next_seq_ = 1;
};

struct Lcg {
  uint32_t state;
  uint32_t Next() {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t flags = data[0];
  Lcg pieces{data[1] | 1u};
  Lcg clock{data[3] | 1u};
  const size_t output_frames = 2 + (flags & 3);
  const bool reconnect = (flags & 8) != 0;
  // Kept sends: none, room for one largest, or for three (bits 4-5).
  const size_t unacked_entries = (flags >> 4) & 3;
  device::SessionOptions options;
  options.device_id = kDeviceId;
  options.max_frame_payload = (flags & 4) != 0 ? 64 + uint32_t{data[2]} * 16 : protocol::kMaxFramePayloadBytes;
  options.ack_every = 1 + data[2] % 20;
  options.welcome_timeout_us = 1'000'000;
  size_t logged = 0;
  options.log.write = &DiscardLine;
  options.log.context = &logged;
  options.log.min_level = nodefl::LogLevel::kDebug;
  data += 4;
  size -= 4;

  // Caller memory of exactly the documented size, at the end of each array.
  static uint8_t frame_storage[kMaxFrame];
  static uint8_t output_storage[5 * kMaxFrame];
  static uint8_t unacked_storage[3 * device::UnackedSends::kMaxEntryBytes];
  const size_t frame_size = protocol::kFrameHeaderBytes + options.max_frame_payload;
  const size_t output_size = output_frames * kMaxFrame;
  const Span<uint8_t> frame(frame_storage + sizeof frame_storage - frame_size, frame_size);
  const Span<uint8_t> output(output_storage + sizeof output_storage - output_size, output_size);
  const size_t unacked_size = unacked_entries * device::UnackedSends::kMaxEntryBytes;
  const Span<uint8_t> unacked(unacked_storage + sizeof unacked_storage - unacked_size, unacked_size);

  // The HCT role: device 3 with four neighbours, one beyond most graphs.
  static fw::HctNeighbour neighbours[4];
  static fw::CodebookEntry pool[5 * 8];
  static uint8_t tree[512], plan[64];
  static nodefl::LedgerEntry ledger_entries[8];
  const uint32_t ids[4] = {1, 2, 5, 40};
  for (size_t i = 0; i < 4; ++i) {
    neighbours[i] = fw::HctNeighbour();
    neighbours[i].id = ids[i];
  }
  fw::HctStorage storage;
  storage.neighbours = neighbours;
  storage.codebook_pool = pool;
  storage.tree = tree;
  storage.bin_plan = plan;
  nodefl::Drbg rng;
  Check(rng.SeedDeterministic(7, kDeviceId).ok());
  nodefl::PrivacyLedger ledger(ledger_entries, nodefl::PrivacyBudget::Unlimited());
  fw::FedWalkHctRole hct(kDeviceId, storage, rng, ledger);
  Check(hct.Init().ok());
  HctProbe hct_probe(hct);
  EchoProbe echo_probe;

  static device::DeviceSession* session_slot;  // the session is ~9 KiB: keep it off the stack
  alignas(device::DeviceSession) static uint8_t session_memory[sizeof(device::DeviceSession)];
  session_slot = new (session_memory) device::DeviceSession(options, device::SessionBuffers{frame, output, unacked});
  device::DeviceSession& session = *session_slot;
  Check(session.AddRole(hct_probe).ok() && session.AddRole(echo_probe).ok());

  static OutputReader reader;
  reader.Restart();
  role_failed = false;
  uint64_t now = 1'000'000;
  Check(session.Start(now).ok());
  Check(session.state() == device::SessionState::kAwaitingWelcome);

  auto check_output = [&] {
    const ConstByteSpan pending = session.PendingOutput();
    Check(pending.data() == output.data() && pending.size() <= output.size());
  };
  // Hands the reader a prefix of the output (usually all of it).
  auto drain = [&] {
    check_output();
    const ConstByteSpan pending = session.PendingOutput();
    const uint32_t r = pieces.Next();
    const size_t n = (r & 3) != 0 ? pending.size() : (pending.empty() ? 0 : (r >> 2) % (pending.size() + 1));
    reader.Read(pending.first(n));
    session.ConsumeOutput(n);
  };
  // After a close: nothing more goes in or out.
  auto check_stays_closed = [&](ConstByteSpan rest) {
    Check(session.state() == device::SessionState::kClosed);
    size_t consumed = 7;
    Check(session.OnReceived(rest, now, &consumed).code() == StatusCode::kFailedPrecondition && consumed == 0);
    const size_t before = session.PendingOutput().size();
    Check(session.Poll(now + 1'000'000'000).ok());
    Check(session.PendingOutput().size() == before && session.state() == device::SessionState::kClosed);
  };

  size_t at = 0;
  uint32_t reconnects = 0;
  for (size_t steps = 0; at < size && steps < 4 * size + 64; ++steps) {
    const uint32_t r = pieces.Next();
    const size_t left = size - at;
    const size_t want = (r & 7) == 0 ? 1 + (r >> 3) % 6000 : 1 + (r >> 3) % 300;
    const ConstByteSpan piece(data + at, want < left ? want : left);
    const bool was_closed = session.state() == device::SessionState::kClosed;
    role_failed = false;
    size_t consumed = SIZE_MAX;
    const Status received = session.OnReceived(piece, now, &consumed);
    Check(consumed <= piece.size());
    if (was_closed) Check(received.code() == StatusCode::kFailedPrecondition && consumed == 0);
    at += consumed;
    Status failure = received;
    if (received.ok()) {
      // Input left over only for want of output room.
      if (consumed < piece.size()) Check(!session.CanSend());
    } else if (!role_failed) {
      Check(session.state() == device::SessionState::kClosed);
    }
    drain();
    if (received.ok()) {
      const uint32_t c = clock.Next();
      now += (c & 3) == 0 ? (c >> 2) % 3'000'000 : (c >> 2) % 50'000;
      const bool closed_before_poll = session.state() == device::SessionState::kClosed;
      const size_t before = session.PendingOutput().size();
      const Status polled = session.Poll(now);
      check_output();
      if (closed_before_poll) Check(polled.ok() && session.PendingOutput().size() == before);
      if (!polled.ok() && !role_failed) Check(session.state() == device::SessionState::kClosed);
      failure = polled;
      drain();
    }
    if (failure.ok() && session.state() != device::SessionState::kClosed) continue;
    if (!role_failed) check_stays_closed(ConstByteSpan(data + at, size - at));
    // The app ends the connection; it may then reconnect and go on.
    if (!reconnect || reconnects == 3) break;
    ++reconnects;
    role_failed = false;
    Check(session.Reconnect(now).ok());
    Check(session.state() == device::SessionState::kAwaitingWelcome && session.PendingOutput().size() > 0);
    reader.Restart();
  }
  check_output();
  session.~DeviceSession();
  return 0;
}
