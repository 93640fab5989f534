// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstring>

#include "nodefl/host/net/tcp_stream.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::server::net {
namespace {

// Per-connection memory is what limits how many devices one server holds
// (docs/benchmarks.md); these sizes are a few frames each.
constexpr size_t kPlaintextChunk = 4096;
constexpr size_t kWriteBatchBytes = 8 * 1024;
constexpr size_t kRelayTakeMessages = 32;
// Peer-certificate answers waiting to be written before the reader pauses.
constexpr size_t kControlQueueSoftLimit = 256;

StatusCode CodeForAttach(AttachStatus s) {
  switch (s) {
    case AttachStatus::kUnknownDevice: return StatusCode::kPermissionDenied;
    case AttachStatus::kWrongToken: return StatusCode::kUnauthenticated;
    case AttachStatus::kServerFull: return StatusCode::kUnavailable;
    default: return StatusCode::kInternal;
  }
}

}  // namespace

Connection::Connection(ServerContext& context, tcp::socket socket, uint64_t connection_id)
    : Connection(context, std::make_unique<host::net::TcpStream>(std::move(socket)), connection_id) {}

Connection::Connection(ServerContext& context, std::unique_ptr<host::net::ByteStream> stream,
                       uint64_t connection_id)
    : ctx_(context),
      strand_(asio::make_strand(stream->get_executor())),
      tls_(std::move(stream), TlsSocket::Buffers{}),
      writer_wake_(strand_),
      written_(strand_),
      peer_key_slot_(strand_),
      relay_room_(strand_),
      parked_room_(strand_),
      deadline_timer_(strand_),
      id_(connection_id),
      frame_storage_(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes),
      decoder_(ByteSpan(frame_storage_), std::min<size_t>(context.config.max_frame_bytes,
                                                         protocol::kMaxFramePayloadBytes)),
      in_(std::make_unique<nodefl_wire_Envelope>()),
      out_(std::make_unique<nodefl_wire_Envelope>()) {
  remote_ = tls_.remote();
  ctx_.counters.open_connections.fetch_add(1, std::memory_order_relaxed);
}

Connection::~Connection() { ctx_.counters.open_connections.fetch_sub(1, std::memory_order_relaxed); }

void Connection::Start() {
  asio::co_spawn(strand_, [self = shared_from_this()] { return self->Run(); }, asio::detached);
}

void Connection::Wake() { writer_wake_.Wake(); }

void Connection::OnRelayReady() {
  asio::post(strand_, [self = shared_from_this()] { self->Wake(); });
}

void Connection::RequestClose(CloseReason reason) {
  asio::post(strand_, [self = shared_from_this(), reason] {
    if (self->state_ == State::kClosed) return;
    protocol::InitEnvelope(self->out_.get(), nodefl_wire_Envelope_goodbye_tag);
    protocol::SetString(self->out_->body.goodbye.reason,
                    reason == CloseReason::kReplaced ? "replaced by a newer connection"
                                                     : "server shutting down");
    self->QueueControl(*self->out_);
    self->close_after_flush_ = true;
    if (self->writer_running_) {
      self->Wake();
    } else {
      self->Close();
    }
  });
}

void Connection::QueueArtefacts(uint64_t job_id, uint32_t round, std::vector<StreamedArtefact>& artefacts) {
  for (StreamedArtefact& a : artefacts) {
    JobStreamItem item;
    item.artefact = std::move(a);
    item.job_id = job_id;
    item.round = round;
    item.transfer_id = next_transfer_id_++;
    job_stream_.push_back(std::move(item));
  }
}

void Connection::SendJobArtefacts(uint64_t job_id, uint32_t round, std::vector<StreamedArtefact> artefacts) {
  asio::post(strand_, [self = shared_from_this(), job_id, round, artefacts = std::move(artefacts)]() mutable {
    if (self->state_ != State::kRunning) return;
    self->QueueArtefacts(job_id, round, artefacts);
    self->Wake();
  });
}

void Connection::SendJobRound(uint64_t job_id, uint32_t round, nodefl_wire_JobKind kind,
                              uint32_t deadline_ms, std::vector<uint8_t> parameters,
                              std::vector<StreamedArtefact> artefacts, bool peer_directory) {
  asio::post(strand_, [self = shared_from_this(), job_id, round, kind, deadline_ms, peer_directory,
                       parameters = std::move(parameters), artefacts = std::move(artefacts)]() mutable {
    if (self->state_ != State::kRunning) return;
    JobStreamItem start;
    start.is_start = true;
    start.peer_directory = peer_directory;
    start.kind = kind;
    start.deadline_ms = deadline_ms;
    start.parameters = std::move(parameters);
    start.job_id = job_id;
    start.round = round;
    self->job_stream_.push_back(std::move(start));
    self->QueueArtefacts(job_id, round, artefacts);
    self->Wake();
  });
}

void Connection::SendJobData(uint64_t job_id, uint32_t round, uint32_t kind, std::vector<uint8_t> bytes,
                             uint64_t record_id) {
  asio::post(strand_, [self = shared_from_this(), job_id, round, kind, record_id, bytes = std::move(bytes)]() mutable {
    if (self->state_ != State::kRunning) return;
    JobStreamItem item;
    item.is_data = true;
    item.data_kind = kind;
    item.record_id = record_id;
    item.parameters = std::move(bytes);
    item.job_id = job_id;
    item.round = round;
    self->job_stream_.push_back(std::move(item));
    self->Wake();
  });
}

void Connection::TakeJobStream(std::vector<uint8_t>& batch, size_t limit) {
  // Frames are encoded here, not when queued, because sequence numbers
  // follow the order frames are written in.
  nodefl_wire_Envelope& e = *out_;
  std::vector<uint8_t>& frame = job_frame_;
  frame.resize(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes);
  while (!job_stream_.empty() && batch.size() < limit) {
    JobStreamItem& item = job_stream_.front();
    bool done = false;
    if (item.is_data) {
      protocol::InitEnvelope(&e, nodefl_wire_Envelope_job_data_tag, next_out_seq_, item.job_id, item.round);
      e.body.job_data.kind = item.data_kind;
      e.body.job_data.send_id = item.record_id;
      if (!protocol::SetBytes(&e.body.job_data.data, ConstByteSpan(item.parameters)).ok()) {
        ctx_.log->Error("job_data_too_large", {{"conn", id_}, {"device", device_id_}});
        job_stream_.pop_front();
        continue;
      }
      done = true;
    } else if (item.is_start) {
      protocol::InitEnvelope(&e, nodefl_wire_Envelope_job_start_tag, next_out_seq_, item.job_id, item.round);
      e.body.job_start.kind = item.kind;
      e.body.job_start.deadline_ms = item.deadline_ms;
      e.body.job_start.peer_directory = item.peer_directory;
      if (!protocol::SetBytes(&e.body.job_start.parameters, ConstByteSpan(item.parameters)).ok()) {
        ctx_.log->Error("job_parameters_too_large", {{"conn", id_}, {"device", device_id_}});
        job_stream_.pop_front();
        continue;
      }
      done = true;
    } else {
      const std::vector<uint8_t>& bytes = *item.artefact.bytes;
      const uint64_t chunks = protocol::ChunkCount(bytes.size(), protocol::kMaxChunkDataBytes);
      if (item.next_chunk < 0) {
        protocol::InitEnvelope(&e, nodefl_wire_Envelope_chunk_header_tag, next_out_seq_, item.job_id, item.round);
        nodefl_wire_ChunkHeader& h = e.body.chunk_header;
        h.transfer_id = item.transfer_id;
        h.artefact = item.artefact.kind;
        h.total_bytes = bytes.size();
        h.chunk_count = static_cast<uint32_t>(chunks);
        (void)protocol::SetBytes(&h.sha256, ConstByteSpan(item.artefact.sha256.data(), item.artefact.sha256.size()));
        item.next_chunk = 0;
        done = chunks == 0;
      } else {
        const uint64_t offset = static_cast<uint64_t>(item.next_chunk) * protocol::kMaxChunkDataBytes;
        const size_t size = static_cast<size_t>(std::min<uint64_t>(protocol::kMaxChunkDataBytes, bytes.size() - offset));
        protocol::InitEnvelope(&e, nodefl_wire_Envelope_chunk_tag, next_out_seq_, item.job_id, item.round);
        e.body.chunk.transfer_id = item.transfer_id;
        e.body.chunk.index = static_cast<uint32_t>(item.next_chunk);
        (void)protocol::SetBytes(&e.body.chunk.data, ConstByteSpan(bytes.data() + offset, size));
        ++item.next_chunk;
        done = static_cast<uint64_t>(item.next_chunk) == chunks;
        ctx_.counters.artefact_bytes.fetch_add(size, std::memory_order_relaxed);
      }
    }
    Result<size_t> n = protocol::EncodeFrame(e, ByteSpan(frame));
    if (!n.ok()) {
      ctx_.log->Error("encode_failed", {{"conn", id_}, {"device", device_id_}, {"body", protocol::BodyName(e.which_body)}});
      job_stream_.pop_front();
      continue;
    }
    ++next_out_seq_;
    batch.insert(batch.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(*n));
    if (done) job_stream_.pop_front();
  }
}

bool Connection::QueueControl(nodefl_wire_Envelope& env) {
  env.version = protocol::kProtocolVersion;
  env.seq = next_out_seq_;
  std::vector<uint8_t> frame(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes);
  Result<size_t> n = protocol::EncodeFrame(env, ByteSpan(frame));
  if (!n.ok()) {
    ctx_.log->Error("encode_failed", {{"conn", id_}, {"device", device_id_}, {"body", protocol::BodyName(env.which_body)}});
    return false;
  }
  frame.resize(*n);
  ++next_out_seq_;
  control_.push_back(std::move(frame));
  Wake();
  return true;
}

bool Connection::Refuse(StatusCode code, const std::string& text, uint64_t offending_seq,
                        const char* event) {
  ctx_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
  ctx_.log->Warn(event, {{"conn", id_},
                         {"device", device_id_},
                         {"peer", remote_},
                         {"code", Status(code).str()},
                         {"reason", text}});
  protocol::InitError(out_.get(), code, text.c_str(), offending_seq, 0);
  QueueControl(*out_);
  close_after_flush_ = true;
  state_ = State::kClosing;
  return false;
}

void Connection::SetDeadline(uint32_t ms, const char* what) {
  const Clock::time_point next = Clock::now() + std::chrono::milliseconds(ms);
  // The watchdog sleeps until the deadline it last saw; a sooner one (the
  // Hello deadline after a longer handshake deadline) must wake it to re-arm.
  const bool sooner = next < deadline_;
  deadline_ = next;
  deadline_what_ = what;
  if (sooner) deadline_timer_.cancel();
}

void Connection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  tls_.Close();
  writer_wake_.Wake();
  written_.Wake();
  peer_key_slot_.Wake();
  relay_room_.Wake();
  parked_room_.Wake();
  deadline_timer_.cancel();
}

void Connection::Detach() {
  if (!attached_) return;
  attached_ = false;
  ctx_.relay->EndSession(device_id_, generation_);
  ctx_.registry->Detach(device_id_, generation_);
}

asio::awaitable<void> Connection::Watchdog() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    deadline_timer_.expires_at(deadline_);
    boost::system::error_code ec;
    co_await deadline_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (state_ == State::kClosed) break;
    if (Clock::now() >= deadline_) {
      ctx_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
      ctx_.log->Warn("deadline_exceeded",
                     {{"conn", id_}, {"device", device_id_}, {"peer", remote_}, {"phase", deadline_what_}});
      Close();
      break;
    }
  }
}

asio::awaitable<void> Connection::Run() {
  auto self = shared_from_this();
  ctx_.counters.accepted.fetch_add(1, std::memory_order_relaxed);
  const Status init = tls_.Init(*ctx_.tls, nullptr);
  if (!init.ok()) {
    ctx_.log->Error("tls_init_failed", {{"conn", id_}, {"code", init.str()}});
    Close();
    co_return;
  }
  SetDeadline(ctx_.config.handshake_timeout_ms, "handshake");
  asio::co_spawn(strand_, Watchdog(), asio::detached);

  const Status handshake = co_await tls_.Handshake();
  if (!handshake.ok()) {
    ctx_.counters.handshakes_failed.fetch_add(1, std::memory_order_relaxed);
    ctx_.log->Warn("tls_handshake_failed", {{"conn", id_},
                                            {"peer", remote_},
                                            {"code", handshake.str()},
                                            {"detail", tls_.endpoint().last_error_text()},
                                            {"verify_flags", tls_.endpoint().verify_flags()}});
    Close();
    co_return;
  }
  const Result<uint32_t> identity = tls_.endpoint().PeerDeviceId();
  if (!identity.ok()) {
    ctx_.counters.handshakes_failed.fetch_add(1, std::memory_order_relaxed);
    ctx_.log->Warn("tls_identity_refused", {{"conn", id_}, {"peer", remote_}, {"code", identity.status().str()}});
    co_await tls_.GracefulClose();
    Close();
    co_return;
  }
  ctx_.counters.handshakes_ok.fetch_add(1, std::memory_order_relaxed);
  device_id_ = *identity;
  state_ = State::kAwaitHello;
  SetDeadline(ctx_.config.hello_timeout_ms, "hello");
  tls_.set_on_ciphertext([this] { Wake(); });

  std::vector<uint8_t> plain(kPlaintextChunk);
  std::string end_reason = "peer closed";
  while (state_ == State::kAwaitHello || state_ == State::kRunning) {
    Result<size_t> n = co_await tls_.Read(ByteSpan(plain));
    if (!n.ok() || *n == 0) {
      if (!n.ok()) end_reason = std::string("read: ") + n.status().str() + " " + tls_.endpoint().last_error_text();
      break;
    }
    if (attached_) ctx_.registry->RecordInbound(device_id_, *n);
    size_t offset = 0;
    bool keep = true;
    while (keep && (offset < *n || decoder_.has_frame())) {
      if (!decoder_.has_frame()) {
        size_t consumed = 0;
        const Status fed = decoder_.Feed(ConstByteSpan(plain.data() + offset, *n - offset), &consumed);
        offset += consumed;
        if (!fed.ok()) {
          keep = Refuse(fed.code(), "malformed or oversize frame", 0, "bad_frame");
          break;
        }
        if (!decoder_.has_frame()) break;
      }
      ++frames_in_;
      keep = co_await HandleFrame(decoder_.frame());
      decoder_.PopFrame();
    }
    if (!keep) {
      end_reason = "refused";
      break;
    }
    if (!QueueSendAck()) break;
  }

  // The reader is done, and so is the session: nothing of this connection
  // reaches the relay from now on (the parked sends' drainer looks at the
  // state before each submission), before the session ends below.
  if (state_ == State::kRunning || state_ == State::kAwaitHello) state_ = State::kClosing;
  // Closing: let the writer flush what is queued (an Error, a Goodbye), or
  // write it here if the writer never started.
  if (state_ != State::kClosed) {
    if (writer_running_) {
      close_after_flush_ = true;
      Wake();
    } else {
      std::vector<uint8_t> batch;
      for (auto& f : control_) batch.insert(batch.end(), f.begin(), f.end());
      control_.clear();
      if (!batch.empty() && tls_.endpoint().handshake_done()) (void)co_await tls_.Write(ConstByteSpan(batch));
      co_await tls_.GracefulClose();
      Close();
    }
  }
  ctx_.log->Info("disconnected", {{"conn", id_},
                                  {"device", device_id_},
                                  {"peer", remote_},
                                  {"reason", end_reason},
                                  {"frames_in", frames_in_},
                                  {"writes_out", writes_out_},
                                  {"bytes_in", tls_.bytes_in()},
                                  {"bytes_out", tls_.bytes_out()}});
  Detach();
}

asio::awaitable<void> Connection::Writer() {
  auto self = shared_from_this();
  writer_running_ = true;
  std::vector<uint8_t> batch;
  std::vector<RelayMessage> taken;
  std::vector<uint8_t> frame(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes);
  nodefl_wire_Envelope& env = *out_;
  while (state_ != State::kClosed) {
    batch.clear();
    while (!control_.empty() && batch.size() < kWriteBatchBytes) {
      batch.insert(batch.end(), control_.front().begin(), control_.front().end());
      control_.pop_front();
    }
    if (state_ == State::kRunning && !close_after_flush_) TakeJobStream(batch, kWriteBatchBytes);
    if (state_ == State::kRunning && !close_after_flush_ && batch.size() < kWriteBatchBytes) {
      taken.clear();
      ctx_.relay->Take(device_id_, generation_, kRelayTakeMessages, kWriteBatchBytes, &taken);
      if (!taken.empty()) ctx_.relay_room.Notify(device_id_);  // senders to us may submit again
      for (const RelayMessage& m : taken) {
        protocol::InitEnvelope(&env, nodefl_wire_Envelope_relay_deliver_tag, next_out_seq_, m.job_id, m.round);
        env.body.relay_deliver.src = m.src;
        env.body.relay_deliver.relay_id = m.relay_id;
        if (!protocol::SetBytes(&env.body.relay_deliver.sealed, ConstByteSpan(m.sealed_bytes().data(),
                                                                          m.sealed_bytes().size()))
                 .ok()) {
          continue;  // cannot happen: the relay refuses payloads over the wire limit
        }
        Result<size_t> n = protocol::EncodeFrame(env, ByteSpan(frame));
        if (!n.ok()) continue;
        ++next_out_seq_;
        batch.insert(batch.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(*n));
        ctx_.counters.relay_delivered.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (batch.empty()) {
      if (close_after_flush_ || state_ != State::kRunning) break;
      co_await writer_wake_.Wait();
      continue;
    }
    const Status written = co_await tls_.Write(ConstByteSpan(batch));
    if (!written.ok()) break;
    written_.Wake();
    ++writes_out_;
    ctx_.registry->RecordOutbound(device_id_, batch.size());
  }
  if (state_ != State::kClosed) {
    co_await tls_.GracefulClose();
    Close();
  }
  writer_running_ = false;
}

asio::awaitable<bool> Connection::HandleFrame(ConstByteSpan payload) {
  nodefl_wire_Envelope& m = *in_;
  const Status decoded = protocol::DecodeEnvelope(payload, &m);
  if (!decoded.ok()) co_return Refuse(decoded.code(), "undecodable message", 0, "bad_message");
  if (m.seq != expected_in_seq_) {
    co_return Refuse(StatusCode::kDataLoss,
                     "sequence number " + std::to_string(m.seq) + ", expected " + std::to_string(expected_in_seq_),
                     m.seq, "out_of_sequence");
  }
  ++expected_in_seq_;
  if (!protocol::MaySend(protocol::Peer::kDevice, m.which_body)) {
    co_return Refuse(StatusCode::kUnimplemented,
                     std::string("devices may not send ") + protocol::BodyName(m.which_body), m.seq,
                     "unexpected_message_type");
  }
  if (state_ == State::kAwaitHello) {
    if (m.which_body != nodefl_wire_Envelope_hello_tag) {
      co_return Refuse(StatusCode::kFailedPrecondition,
                       std::string(protocol::BodyName(m.which_body)) + " before Hello", m.seq, "out_of_phase");
    }
    co_return co_await HandleHello();
  }
  SetDeadline(ctx_.config.idle_timeout_ms, "idle");
  switch (m.which_body) {
    case nodefl_wire_Envelope_heartbeat_tag: {
      protocol::InitEnvelope(out_.get(), nodefl_wire_Envelope_heartbeat_tag);
      out_->body.heartbeat.sent_at_us = m.body.heartbeat.sent_at_us;
      co_return QueueControl(*out_);
    }
    case nodefl_wire_Envelope_relay_send_tag:
      co_return co_await HandleRelaySend();
    case nodefl_wire_Envelope_relay_ack_tag:
      co_return HandleRelayAck();
    case nodefl_wire_Envelope_peer_key_request_tag: {
      // Pause reading while many answers wait to be written: the device's
      // requests then queue in TCP instead of in server memory.
      while (control_.size() > kControlQueueSoftLimit && state_ == State::kRunning) {
        co_await written_.Wait();
      }
      co_return co_await HandlePeerKeyRequest();
    }
    case nodefl_wire_Envelope_job_key_tag:
      co_return HandleJobKey();
    case nodefl_wire_Envelope_job_report_tag:
      if (ctx_.jobs != nullptr) ctx_.jobs->OnJobReport(device_id_, m.job_id, m.round, m.body.job_report);
      co_return true;
    case nodefl_wire_Envelope_job_data_tag:
      co_return co_await HandleJobData();
    case nodefl_wire_Envelope_chunk_header_tag:
      co_return HandleUploadHeader();
    case nodefl_wire_Envelope_chunk_tag:
      co_return HandleUploadChunk();
    case nodefl_wire_Envelope_goodbye_tag:
      ctx_.log->Info("goodbye", {{"conn", id_}, {"device", device_id_}, {"reason", m.body.goodbye.reason}});
      state_ = State::kClosing;
      co_return false;
    case nodefl_wire_Envelope_hello_tag:
      co_return Refuse(StatusCode::kFailedPrecondition, "second Hello", m.seq, "out_of_phase");
    default:
      co_return Refuse(StatusCode::kUnimplemented,
                       std::string("unsupported message ") + protocol::BodyName(m.which_body), m.seq,
                       "unexpected_message_type");
  }
}

asio::awaitable<bool> Connection::HandleHello() {
  const nodefl_wire_Hello& hello = in_->body.hello;
  if (hello.device_id != device_id_) {
    ctx_.counters.refused.fetch_add(1, std::memory_order_relaxed);
    co_return Refuse(StatusCode::kPermissionDenied,
                     "Hello names device " + std::to_string(hello.device_id) + " but the certificate is device " +
                         std::to_string(device_id_),
                     in_->seq, "identity_mismatch");
  }
  AttachResult attached = ctx_.registry->Attach(
      device_id_, std::span<const uint8_t>(hello.resume_token.bytes, hello.resume_token.size),
      shared_from_this());
  if (!attached.ok()) {
    ctx_.counters.refused.fetch_add(1, std::memory_order_relaxed);
    co_return Refuse(CodeForAttach(attached.status),
                     std::string("registration refused: ") + std::string(AttachStatusName(attached.status)),
                     in_->seq, "registration_refused");
  }
  attached_ = true;
  generation_ = attached.generation;
  if (attached.not_saved) {
    // The device goes on; after a restart it will start a new session.
    ctx_.log->Warn("session_not_saved", {{"conn", id_}, {"device", device_id_}, {"error", attached.save_error}});
  }
  const BeginSessionResult begun =
      ctx_.relay->BeginSession(device_id_, attached, hello.last_delivered_relay_id, shared_from_this());
  if (begun.status != BeginSessionStatus::kOk) {
    co_return Refuse(begun.status == BeginSessionStatus::kBeyondDelivered ? StatusCode::kInvalidArgument
                                                                          : StatusCode::kAborted,
                     "relay session could not begin", in_->seq, "relay_session_refused");
  }
  nodefl_wire_Envelope& w = *out_;
  protocol::InitEnvelope(&w, nodefl_wire_Envelope_welcome_tag);
  std::memcpy(w.body.welcome.resume_token.bytes, attached.token.data(), attached.token.size());
  w.body.welcome.resume_token.size = static_cast<pb_size_t>(attached.token.size());
  w.body.welcome.heartbeat_interval_ms = ctx_.config.heartbeat_interval_ms;
  w.body.welcome.idle_timeout_ms = ctx_.config.idle_timeout_ms;
  w.body.welcome.max_frame_bytes = ctx_.config.max_frame_bytes;
  w.body.welcome.pending_messages = static_cast<uint32_t>(std::min<uint64_t>(begun.pending, UINT32_MAX));
  w.body.welcome.resumed = attached.resumed;
  // What the device may forget of its numbered sends; it sends the rest again.
  w.body.welcome.last_relay_send_id = attached.resumed ? ctx_.relay->LastSendId(device_id_) : 0;
  if (!QueueControl(w)) co_return false;
  state_ = State::kRunning;
  SetDeadline(ctx_.config.idle_timeout_ms, "idle");
  ctx_.counters.registered.fetch_add(1, std::memory_order_relaxed);
  ctx_.log->Debug("registered", {{"conn", id_},
                                 {"device", device_id_},
                                 {"peer", remote_},
                                 {"resumed", attached.resumed},
                                 {"pending", begun.pending}});
  asio::co_spawn(strand_, Writer(), asio::detached);
  co_return true;
}

bool Connection::QueueSendAck() {
  if (send_id_accepted_ <= send_id_acked_ || state_ != State::kRunning) return true;
  protocol::InitEnvelope(out_.get(), nodefl_wire_Envelope_relay_send_ack_tag);
  out_->body.relay_send_ack.send_id = send_id_accepted_;
  if (!QueueControl(*out_)) return false;
  send_id_acked_ = send_id_accepted_;
  return true;
}

namespace {
bool RelayHasNoRoom(RelayResult r) {
  return r == RelayResult::kRefusedQueueFull || r == RelayResult::kRefusedRelayMemoryFull;
}
// What a parked send counts against relay_parked_bytes: its payload and
// about what holding it costs besides.
size_t ParkedCost(size_t sealed_bytes) { return sealed_bytes + 64; }
}  // namespace

asio::awaitable<bool> Connection::HandleRelaySend() {
  const nodefl_wire_RelaySend& send = in_->body.relay_send;
  if (send.dst == device_id_) {
    co_return Refuse(StatusCode::kInvalidArgument, "relay to itself", in_->seq, "relay_refused");
  }
  const std::span<const uint8_t> sealed(send.sealed.bytes, send.sealed.size);
  // Credit (docs/protocol.md): a numbered send the relay has no room for is
  // parked and acknowledged only once the relay took it, so the device's
  // send window bounds what waits here, and the reader goes on reading
  // (the device's RelayAcks above all: waiting for them is how a flood
  // used to form a cycle of readers that each wait for another). Once one
  // send is parked, every later one queues behind it, numbered or not:
  // the relay takes a device's sends in the order it wrote them.
  if (!parked_.empty() || (send.send_id != 0 && ctx_.config.relay_parked_bytes > 0)) {
    if (parked_.empty()) {
      const SubmitResult r =
          ctx_.relay->Submit(device_id_, send.dst, sealed, in_->job_id, in_->round, send.send_id);
      if (!RelayHasNoRoom(r.result)) co_return FinishSubmit(r, send.dst, sealed.size(), send.send_id, in_->seq);
    }
    // A named object, not a temporary in the co_await: GCC 12 destroys a
    // temporary argument of a coroutine call there twice.
    ParkedSend p{send.dst, in_->round, in_->job_id, send.send_id, in_->seq,
                 std::vector<uint8_t>(sealed.begin(), sealed.end())};
    co_return co_await Park(std::move(p));
  }
  // Unnumbered sends (devices that keep none) and parking switched off: the
  // reader waits for room itself, as in protocol v1.
  const SubmitResult r = co_await SubmitWaiting(send.dst, sealed, in_->job_id, in_->round, send.send_id);
  co_return FinishSubmit(r, send.dst, sealed.size(), send.send_id, in_->seq);
}

asio::awaitable<SubmitResult> Connection::SubmitWaiting(uint32_t dst, std::span<const uint8_t> sealed,
                                                         uint64_t job_id, uint32_t round, uint64_t send_id) {
  // While the destination's queue (or the relay's memory) is full this
  // waits as long as deliveries keep draining; it gives up only after
  // relay_backpressure_wait_ms without progress (a stuck receiver must not
  // hold senders forever, a busy hub must not fail them). It sleeps until
  // the destination's connection takes or acknowledges messages (any
  // acknowledgement, when the relay's memory is full), and looks again at
  // least every kRecheck for progress nobody announces (the destination's
  // session ending).
  constexpr auto kRecheck = std::chrono::milliseconds(50);
  const auto patience = std::chrono::milliseconds(ctx_.config.relay_backpressure_wait_ms);
  auto give_up = Clock::now() + patience;
  uint64_t drained = 0;
  const auto submit = [&] { return ctx_.relay->Submit(device_id_, dst, sealed, job_id, round, send_id); };
  SubmitResult r = submit();
  while (!Accepted(r.result) && r.result != RelayResult::kDuplicateSend) {
    const bool destination_full = r.result == RelayResult::kRefusedQueueFull;
    const bool relay_full = r.result == RelayResult::kRefusedRelayMemoryFull;
    if (!(destination_full || relay_full) || state_ != State::kRunning) break;
    // Progress is the destination draining (its queue is full), or any
    // device draining (the relay's memory as a whole is full).
    uint64_t progress = drained;
    if (destination_full) {
      if (const auto q = ctx_.relay->QueueSnapshot(dst)) progress = q->highest_delivered;
    } else {
      progress = ctx_.relay->Stats().acked;
    }
    if (progress != drained) {
      drained = progress;
      give_up = Clock::now() + patience;
    }
    if (Clock::now() >= give_up) break;
    {
      auto wake = [weak = weak_from_this()] {
        if (auto self = weak.lock()) asio::post(self->strand_, [self] { self->relay_room_.Wake(); });
      };
      const RelayRoom::Subscription room = destination_full ? ctx_.relay_room.ForDevice(dst, std::move(wake))
                                                            : ctx_.relay_room.ForMemory(std::move(wake));
      // Once more: room made from now on wakes us, room made before the
      // subscription is seen here.
      r = submit();
      if (Accepted(r.result)) break;
      co_await relay_room_.WaitUntil(std::min(give_up, Clock::now() + kRecheck));
    }
    if (state_ != State::kRunning) break;  // the session may have ended meanwhile
    r = submit();
  }
  co_return r;
}

bool Connection::FinishSubmit(const SubmitResult& r, uint32_t dst, size_t bytes, uint64_t send_id, uint64_t seq) {
  if (Accepted(r.result) || r.result == RelayResult::kDuplicateSend) {
    if (r.result != RelayResult::kDuplicateSend) {
      ctx_.counters.relay_sent.fetch_add(1, std::memory_order_relaxed);
      ctx_.counters.relay_bytes.fetch_add(bytes, std::memory_order_relaxed);
    }
    send_id_accepted_ = std::max(send_id_accepted_, send_id);
    return true;
  }
  if (state_ != State::kRunning) return false;  // closing already: nothing to refuse
  const bool client_error = r.result == RelayResult::kRefusedUnknownDestination ||
                            r.result == RelayResult::kRefusedTooLarge;
  return Refuse(client_error ? StatusCode::kInvalidArgument : StatusCode::kResourceExhausted,
                "relay to device " + std::to_string(dst) + " refused: " + std::string(RelayResultName(r.result)),
                seq, "relay_refused");
}

asio::awaitable<bool> Connection::HandleJobData() {
  const nodefl_wire_Envelope& m = *in_;
  if (m.job_id == 0) co_return Refuse(StatusCode::kInvalidArgument, "job data outside a job", m.seq, "bad_upload");
  const nodefl_wire_JobData& d = m.body.job_data;
  const std::span<const uint8_t> data(d.data.bytes, d.data.size);
  // A numbered record behind parked RelaySends waits its turn: the relay
  // takes a device's send ids in order, and this one must not pass them.
  if (d.send_id != 0 && !parked_.empty()) {
    ParkedSend p{0, m.round, m.job_id, d.send_id, m.seq, std::vector<uint8_t>(data.begin(), data.end())};
    p.job_data = true;
    p.kind = d.kind;
    co_return co_await Park(std::move(p));
  }
  DeliverJobData(m.job_id, m.round, d.kind, data, d.send_id);
  co_return true;
}

void Connection::DeliverJobData(uint64_t job_id, uint32_t round, uint32_t kind, std::span<const uint8_t> data,
                                uint64_t send_id) {
  // A resend of a record the job already has (the acknowledgement was lost
  // with the old connection) is dropped here, once per send id.
  send_id_accepted_ = std::max(send_id_accepted_, send_id);
  if (!ctx_.relay->ClaimSendId(device_id_, send_id)) return;
  if (ctx_.jobs != nullptr) {
    ctx_.jobs->OnJobUpload(device_id_, job_id, round, kind, std::vector<uint8_t>(data.begin(), data.end()));
  }
}

asio::awaitable<bool> Connection::Park(ParkedSend send) {
  const size_t cost = ParkedCost(send.payload.size());
  // Over the bound (a device whose send window is larger than
  // relay_parked_bytes, or one that keeps no window), the reader waits for
  // the drainer to admit what is ahead, as the v1 reader waited for the
  // relay itself; the drainer's own patience bounds that wait.
  while (!parked_.empty() && parked_bytes_ + cost > ctx_.config.relay_parked_bytes &&
         state_ == State::kRunning) {
    co_await parked_room_.Wait();
  }
  if (state_ != State::kRunning) co_return false;
  if (!send.job_data) ctx_.counters.relay_parked.fetch_add(1, std::memory_order_relaxed);
  parked_.push_back(std::move(send));
  parked_bytes_ += cost;
  if (!drainer_running_) {
    drainer_running_ = true;
    asio::co_spawn(strand_, DrainParked(), asio::detached);
  }
  co_return true;
}

asio::awaitable<void> Connection::DrainParked() {
  auto self = shared_from_this();
  // Admits the oldest parked send once the relay takes it: first all that
  // it takes now (then one acknowledgement for them, which reopens the
  // device's window), then the next one with waiting.
  const auto admit = [this](const SubmitResult* r) {
    ParkedSend& p = parked_.front();
    bool ok = true;
    if (p.job_data) {  // nothing to wait for once at the front
      DeliverJobData(p.job_id, p.round, p.kind, p.payload, p.send_id);
    } else {
      ok = FinishSubmit(*r, p.dst, p.payload.size(), p.send_id, p.seq);
    }
    parked_bytes_ -= ParkedCost(p.payload.size());
    parked_.pop_front();
    parked_room_.Wake();
    return ok;
  };
  bool ok = true;
  while (ok && !parked_.empty() && state_ == State::kRunning) {
    while (ok && !parked_.empty() && state_ == State::kRunning) {
      const ParkedSend& p = parked_.front();
      if (p.job_data) {
        ok = admit(nullptr);
        continue;
      }
      const SubmitResult r = ctx_.relay->Submit(device_id_, p.dst, p.payload, p.job_id, p.round, p.send_id);
      if (RelayHasNoRoom(r.result)) break;
      ok = admit(&r);
    }
    if (!ok || !QueueSendAck() || parked_.empty()) break;
    const ParkedSend& p = parked_.front();
    const SubmitResult r = co_await SubmitWaiting(p.dst, p.payload, p.job_id, p.round, p.send_id);
    if (state_ != State::kRunning) break;
    ok = admit(&r);
  }
  if (ok) (void)QueueSendAck();
  drainer_running_ = false;
  parked_room_.Wake();
}

bool Connection::HandleRelayAck() {
  const AckResult r = ctx_.relay->Ack(device_id_, in_->body.relay_ack.relay_id);
  if (r.status == AckStatus::kAcked) {
    // Released messages free room in our queue and in the relay's memory.
    ctx_.relay_room.Notify(device_id_);
    ctx_.relay_room.NotifyMemory();
  }
  if (r.status == AckStatus::kBeyondDelivered) {
    return Refuse(StatusCode::kInvalidArgument, "ack beyond what was delivered", in_->seq, "bad_ack");
  }
  return true;
}

namespace {
Status AppendUpload(void* context, uint64_t offset, ConstByteSpan data) {
  auto* bytes = static_cast<std::vector<uint8_t>*>(context);
  if (offset != bytes->size()) return Status::DataLoss();
  bytes->insert(bytes->end(), data.begin(), data.end());
  return Status::Ok();
}
}  // namespace

bool Connection::HandleUploadHeader() {
  const nodefl_wire_Envelope& m = *in_;
  if (m.job_id == 0) {
    return Refuse(StatusCode::kInvalidArgument, "upload outside a job", m.seq, "bad_upload");
  }
  if (upload_ && upload_->receiving()) {
    return Refuse(StatusCode::kFailedPrecondition, "upload announced while another is in progress", m.seq,
                  "bad_upload");
  }
  upload_bytes_.clear();
  upload_ = std::make_unique<protocol::ChunkReceiver>(&AppendUpload, &upload_bytes_, ctx_.config.max_upload_bytes);
  upload_job_id_ = m.job_id;
  upload_round_ = m.round;
  const Status s = upload_->OnHeader(m.body.chunk_header);
  if (!s.ok()) {
    return Refuse(s.code(),
                  "upload refused: " + std::string(s.str()) + " (limit " +
                      std::to_string(ctx_.config.max_upload_bytes) + " bytes)",
                  m.seq, "bad_upload");
  }
  upload_bytes_.reserve(static_cast<size_t>(m.body.chunk_header.total_bytes));
  return FinishUploadIfComplete();
}

bool Connection::HandleUploadChunk() {
  const nodefl_wire_Envelope& m = *in_;
  if (!upload_ || !upload_->receiving() || m.job_id != upload_job_id_) {
    return Refuse(StatusCode::kFailedPrecondition, "chunk outside an announced upload", m.seq, "bad_upload");
  }
  const Status s = upload_->OnChunk(m.body.chunk);
  if (!s.ok()) return Refuse(s.code(), "upload chunk refused: " + std::string(s.str()), m.seq, "bad_upload");
  return FinishUploadIfComplete();
}

bool Connection::FinishUploadIfComplete() {
  if (!upload_->complete()) return true;
  ctx_.counters.upload_bytes.fetch_add(upload_bytes_.size(), std::memory_order_relaxed);
  const uint32_t artefact = upload_->artefact();
  upload_.reset();
  if (ctx_.jobs != nullptr) {
    ctx_.jobs->OnJobUpload(device_id_, upload_job_id_, upload_round_, artefact, std::move(upload_bytes_));
  }
  upload_bytes_ = {};
  return true;
}

bool Connection::HandleJobKey() {
  const nodefl_wire_Envelope& m = *in_;
  const nodefl_wire_JobKey& key = m.body.job_key;
  if (m.job_id == 0 || key.public_key.size != kJobKeyBytes) {
    return Refuse(StatusCode::kInvalidArgument, "job key outside a job or not a 65-byte point", m.seq, "bad_job_key");
  }
  if (ctx_.job_keys == nullptr) return true;
  const AnnounceResult r =
      ctx_.job_keys->Announce(device_id_, m.job_id, std::span<const uint8_t, kJobKeyBytes>(key.public_key.bytes, kJobKeyBytes));
  if (r == AnnounceResult::kNotCurrentJob) {
    ctx_.log->Debug("job_key_ignored", {{"conn", id_}, {"device", device_id_}, {"job", m.job_id}});
  } else {
    ctx_.counters.job_keys_announced.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

asio::awaitable<bool> Connection::HandlePeerKeyRequest() {
  ctx_.counters.peer_key_requests.fetch_add(1, std::memory_order_relaxed);
  const nodefl_wire_PeerKeyRequest& req = in_->body.peer_key_request;
  PeerKeyAnswer answer;
  answer.job_id = in_->job_id;
  answer.round = in_->round;
  // Copy the ids: out_ and in_ are reused while answering.
  answer.ids.assign(req.device_ids, req.device_ids + req.device_ids_count);
  if (!AnswerPeerKeys(answer, /*final=*/ctx_.config.peer_key_wait_ms == 0)) co_return false;
  if (answer.ids.empty()) co_return true;
  // Some peers have not announced their job keys yet (they are a few
  // frames behind, or offline): answer them when they do, without holding
  // up this device's other traffic. A bounded number of requests waits per
  // connection; beyond it the reader pauses (the device's requests then
  // queue in TCP).
  while (waiting_peer_key_requests_ >= kMaxWaitingPeerKeyRequests && state_ == State::kRunning) {
    co_await peer_key_slot_.Wait();
  }
  ++waiting_peer_key_requests_;
  asio::co_spawn(strand_, AnswerPeerKeysLater(shared_from_this(), std::move(answer)), asio::detached);
  co_return true;
}

asio::awaitable<void> Connection::AnswerPeerKeysLater(std::shared_ptr<Connection> self, PeerKeyAnswer answer) {
  const auto give_up = Clock::now() + std::chrono::milliseconds(ctx_.config.peer_key_wait_ms);
  auto interval = std::chrono::milliseconds(2);
  asio::steady_timer timer(strand_);
  while (!answer.ids.empty() && state_ == State::kRunning) {
    const bool final = Clock::now() >= give_up;
    if (!AnswerPeerKeys(answer, final)) break;
    if (final) break;
    timer.expires_after(interval);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    interval = std::min(interval * 2, std::chrono::milliseconds(100));
  }
  --waiting_peer_key_requests_;
  peer_key_slot_.Wake();
  (void)self;
}

bool Connection::AnswerPeerKeys(PeerKeyAnswer& answer, bool final) {
  std::vector<uint32_t> pending;
  for (uint32_t id : answer.ids) {
    nodefl_wire_Envelope& e = *out_;
    protocol::InitEnvelope(&e, nodefl_wire_Envelope_peer_certificate_tag, 0, answer.job_id, answer.round);
    e.body.peer_certificate.device_id = id;
    const std::span<const uint8_t> der = ctx_.certificates->Find(id);
    e.body.peer_certificate.found = !der.empty();
    if (!der.empty() && !protocol::SetBytes(&e.body.peer_certificate.certificate_der,
                                        ConstByteSpan(der.data(), der.size()))
                             .ok()) {
      e.body.peer_certificate.found = false;
    }
    // Within the running job the device needs the peer's job key as well.
    // A peer that has not announced one by `final` (or a job that is not
    // running) gets the certificate alone: the device cannot key it and
    // counts a key failure.
    if (e.body.peer_certificate.found && answer.job_id != 0 && ctx_.job_keys != nullptr) {
      JobKey key;
      const JobKeyLookup lookup = ctx_.job_keys->Find(id, answer.job_id, &key);
      if (lookup == JobKeyLookup::kPending && !final) {
        pending.push_back(id);
        continue;
      }
      if (lookup == JobKeyLookup::kFound) {
        (void)protocol::SetBytes(&e.body.peer_certificate.job_key, ConstByteSpan(key.data(), key.size()));
      } else if (lookup == JobKeyLookup::kPending) {
        ctx_.counters.peer_keys_unanswered.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!QueueControl(e)) return false;
  }
  answer.ids = std::move(pending);
  return true;
}

}  // namespace nodefl::server::net
