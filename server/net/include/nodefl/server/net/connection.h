// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Connection: one device's TLS connection on the server, run by coroutines
// on its own strand (docs/protocol.md, "Server session"):
//
//   handshake (deadline) -> identity from the client certificate
//   -> Hello (deadline; must name the certificate's device id)
//   -> registry Attach + relay BeginSession -> Welcome
//   -> running: relay, acks, peer certificates, heartbeats, job reports
//      (idle deadline, reset by every frame)
//   -> close: relay EndSession + registry Detach
//
// Two coroutines share the strand after Welcome: the reader (frames in) and
// the writer (control frames, then relay deliveries pulled from the relay).
// Any protocol violation gets an Error frame naming it, a log line, and the
// connection closed; other connections are unaffected.
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nodefl/server/core/delivery_target.h"
#include "nodefl/server/core/relay.h"
#include "nodefl/server/net/server_context.h"
#include "nodefl/host/net/byte_stream.h"
#include "nodefl/host/net/tls_socket.h"
#include "nodefl/host/net/wake_latch.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/frame.h"

namespace nodefl::server::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using host::net::TlsSocket;

class Connection final : public DeliveryTarget, public std::enable_shared_from_this<Connection> {
 public:
  using Strand = asio::strand<asio::any_io_executor>;

  Connection(ServerContext& context, tcp::socket socket, uint64_t connection_id);
  // Over any byte stream (tests use an in-memory one).
  Connection(ServerContext& context, std::unique_ptr<host::net::ByteStream> stream, uint64_t connection_id);
  ~Connection() override;

  void Start();

  // DeliveryTarget (any thread).
  void OnRelayReady() override;
  void RequestClose(CloseReason reason) override;

  // Queues a JobStart followed by the round's artefacts (any thread). Job
  // messages keep their order among themselves; the writer interleaves them
  // with control frames and relay deliveries.
  void SendJobRound(uint64_t job_id, uint32_t round, nodefl_wire_JobKind kind, uint32_t deadline_ms,
                    std::vector<uint8_t> parameters, std::vector<StreamedArtefact> artefacts,
                    bool peer_directory = false);
  // Queues artefacts of a round already started (no JobStart), e.g. the
  // peer directory once the participants' job keys are in.
  void SendJobArtefacts(uint64_t job_id, uint32_t round, std::vector<StreamedArtefact> artefacts);
  // Queues a JobData record behind what the job stream already holds.
  // `record_id`: the job's numbering of its records to this device
  // (JobData.send_id; 0 for none), by which the device drops one written
  // again after a reconnect.
  void SendJobData(uint64_t job_id, uint32_t round, uint32_t kind, std::vector<uint8_t> bytes,
                   uint64_t record_id = 0);

 private:
  enum class State { kHandshake, kAwaitHello, kRunning, kClosing, kClosed };
  using Clock = std::chrono::steady_clock;

  asio::awaitable<void> Run();
  asio::awaitable<void> Writer();
  asio::awaitable<void> Watchdog();
  // Handles one frame; false means stop reading (closing).
  asio::awaitable<bool> HandleFrame(ConstByteSpan payload);
  asio::awaitable<bool> HandleHello();
  asio::awaitable<bool> HandleRelaySend();
  // Submits one RelaySend, waiting while the destination's queue (or the
  // relay's memory) is full and deliveries drain; gives up after
  // relay_backpressure_wait_ms without progress. `sealed` must stay valid
  // across the wait.
  asio::awaitable<SubmitResult> SubmitWaiting(uint32_t dst, std::span<const uint8_t> sealed, uint64_t job_id,
                                              uint32_t round, uint64_t send_id);
  // Counts an accepted send (or a dropped resend) and advances the
  // acknowledgement; refuses the connection for any other result.
  bool FinishSubmit(const SubmitResult& r, uint32_t dst, size_t bytes, uint64_t send_id, uint64_t seq);
  // Credit (docs/protocol.md): a send the relay has no room for waits here,
  // in order, while the reader goes on reading; the drainer admits it.
  struct ParkedSend;
  asio::awaitable<bool> Park(ParkedSend send);
  // JobData from the device: to the job, once per send id (a numbered
  // record is kept by the device and written again after a resume).
  asio::awaitable<bool> HandleJobData();
  void DeliverJobData(uint64_t job_id, uint32_t round, uint32_t kind, std::span<const uint8_t> data,
                      uint64_t send_id);
  asio::awaitable<void> DrainParked();
  // Queues a RelaySendAck for what was accepted since the last one.
  bool QueueSendAck();
  bool HandleRelayAck();
  // PeerKeyRequest: certificates (and, within a job, the peers' job keys);
  // ids whose job key is not announced yet are answered when it is, or
  // with found = false after peer_key_wait_ms.
  struct PeerKeyAnswer {
    uint64_t job_id = 0;
    uint32_t round = 0;
    std::vector<uint32_t> ids;
  };
  asio::awaitable<bool> HandlePeerKeyRequest();
  asio::awaitable<void> AnswerPeerKeysLater(std::shared_ptr<Connection> self, PeerKeyAnswer answer);
  // Queues the answers it can give; `answer.ids` keeps the ids still
  // waiting for a job key (none if `final`). False if queuing failed.
  bool AnswerPeerKeys(PeerKeyAnswer& answer, bool final);
  bool HandleJobKey();
  bool HandleUploadHeader();
  bool HandleUploadChunk();
  bool FinishUploadIfComplete();
  // Appends the next job-stream frames (JobStart, artefact chunks) to
  // `batch` until it holds about `limit` bytes.
  void TakeJobStream(std::vector<uint8_t>& batch, size_t limit);

  // Appends `artefacts` (moved from) to the job stream on this strand.
  void QueueArtefacts(uint64_t job_id, uint32_t round, std::vector<StreamedArtefact>& artefacts);
  // Encodes `out_` as a frame into the control queue and wakes the writer.
  bool QueueControl(nodefl_wire_Envelope& env);
  // Error frame, log line, then close once everything queued is written.
  bool Refuse(StatusCode code, const std::string& text, uint64_t offending_seq, const char* event);
  void SetDeadline(uint32_t ms, const char* what);
  void Wake();
  void Close();
  void Detach();

  ServerContext& ctx_;
  Strand strand_;
  TlsSocket tls_;
  // The writer sleeps here until there is something to write (Wake()).
  host::net::WakeLatch writer_wake_;
  // The reader sleeps here while it holds back: until the writer has
  // written a batch (the control queue shrank), or a waiting peer-key
  // request finished (a slot is free). Close() wakes every sleeper.
  host::net::WakeLatch written_;
  host::net::WakeLatch peer_key_slot_;
  // ... or until the relay may have room for a RelaySend it refused
  // (ServerContext::relay_room).
  host::net::WakeLatch relay_room_;
  // ... or, with parked sends over relay_parked_bytes, until the drainer
  // admitted one.
  host::net::WakeLatch parked_room_;
  asio::steady_timer deadline_timer_;
  uint64_t id_;
  std::string remote_;

  State state_ = State::kHandshake;
  uint32_t device_id_ = 0;
  uint64_t generation_ = 0;
  bool attached_ = false;
  bool writer_running_ = false;
  bool close_after_flush_ = false;
  Clock::time_point deadline_{};
  const char* deadline_what_ = "handshake";

  uint64_t next_out_seq_ = 1;
  uint64_t expected_in_seq_ = 1;
  std::deque<std::vector<uint8_t>> control_;
  std::vector<uint8_t> frame_storage_;
  protocol::FrameDecoder decoder_;
  std::unique_ptr<nodefl_wire_Envelope> in_;
  std::unique_ptr<nodefl_wire_Envelope> out_;
  // Job stream: whole frames (JobStart) or artefacts sent chunk by chunk.
  struct JobStreamItem {
    bool is_start = false;  // a JobStart
    bool is_data = false;   // a JobData record (kind in data_kind, bytes in parameters, id in record_id)
    uint64_t record_id = 0;
    bool peer_directory = false;  // JobStart.peer_directory
    uint32_t data_kind = 0;
    nodefl_wire_JobKind kind = nodefl_wire_JobKind_JOB_KIND_UNSPECIFIED;
    uint32_t deadline_ms = 0;
    std::vector<uint8_t> parameters;
    StreamedArtefact artefact;  // header (next_chunk == -1), then chunks
    uint64_t job_id = 0;
    uint32_t round = 0;
    uint64_t transfer_id = 0;
    int64_t next_chunk = -1;
  };
  std::deque<JobStreamItem> job_stream_;
  uint64_t next_transfer_id_ = 1;
  std::vector<uint8_t> job_frame_;
  // The device's upload in progress (one at a time).
  std::unique_ptr<protocol::ChunkReceiver> upload_;
  std::vector<uint8_t> upload_bytes_;
  uint64_t upload_job_id_ = 0;
  uint32_t upload_round_ = 0;
  static constexpr uint32_t kMaxWaitingPeerKeyRequests = 64;
  uint32_t waiting_peer_key_requests_ = 0;
  uint64_t frames_in_ = 0;
  // Numbered sends (RelaySend, JobData): the highest accepted on this connection
  // and the highest acknowledged to the device (RelaySendAck, sent once the
  // frames of one read are handled, so a burst costs one ack).
  uint64_t send_id_accepted_ = 0;
  uint64_t send_id_acked_ = 0;
  // RelaySends waiting for room in the relay, oldest first, never
  // acknowledged before the relay took them (so the device's send window
  // bounds them); relay_parked_bytes bounds what the reader parks. A
  // numbered JobData that arrives behind them waits in line too (send ids
  // are taken in order), and goes to the job when it reaches the front.
  struct ParkedSend {
    uint32_t dst = 0;
    uint32_t round = 0;
    uint64_t job_id = 0;
    uint64_t send_id = 0;
    uint64_t seq = 0;
    std::vector<uint8_t> payload;  // the sealed bytes, or the JobData record
    bool job_data = false;
    uint32_t kind = 0;  // JobData.kind
  };
  std::deque<ParkedSend> parked_;
  size_t parked_bytes_ = 0;
  bool drainer_running_ = false;
  uint64_t writes_out_ = 0;
};

}  // namespace nodefl::server::net
