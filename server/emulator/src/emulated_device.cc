// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/emulator/emulated_device.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>

#include "nodefl/client/device_pump.h"

namespace nodefl::emulator {
namespace {

// Ciphertext read from the socket at a time (what TlsSocket read before the
// pump joined TLS and the session).
constexpr size_t kSocketReadChunk = 4096;

}  // namespace

EmulatedDevice::EmulatedDevice(asio::io_context& io, const FleetSetup& fleet, DeviceSetup setup)
    : fleet_(fleet),
      setup_(std::move(setup)),
      strand_(asio::make_strand(io)),
      wake_(strand_),
      drained_(strand_),
      poll_timer_(strand_),
      dice_(setup_.faults.wire_seed),
      fault_timer_(strand_) {}

EmulatedDevice::~EmulatedDevice() = default;

uint64_t EmulatedDevice::NowMicros() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count());
}

void EmulatedDevice::Fail(const std::string& why) {
  // A device that finished its job and then lost its connection (the
  // server had ended) is counted once, as finished.
  if (!failed_ && !counted_finished_) fleet_.stats->failed.fetch_add(1);
  failed_ = true;
  last_error_ = why;
}

Status EmulatedDevice::Init() {
  // The node's graph data moves into the device (id stays readable here).
  node_ = std::make_unique<host::node::DeviceRoles>(fleet_, std::move(static_cast<host::node::NodeData&>(setup_)));
  NODEFL_TRY(node_->credentials().ShareCaChain(*fleet_.ca));
  NODEFL_TRY(node_->credentials().LoadOwnIdentity(ConstByteSpan(setup_.certificate_der),
                                                  ConstByteSpan(setup_.private_key_der)));
  // The key material now lives in MbedTLS's contexts; drop our copies.
  std::fill(setup_.private_key_der.begin(), setup_.private_key_der.end(), 0);
  setup_.private_key_der.clear();
  setup_.certificate_der.clear();
  const seal::PairKeySource pair_keys =
      fleet_.shared_pair_keys != nullptr ? fleet_.shared_pair_keys->source() : seal::PairKeySource();
  NODEFL_TRY(node_->Init(pair_keys));
  session_ = &node_->session();
  if (fleet_.job == "kcagc") {
#if NODEFL_WITH_KCAGC
    // A kCAGC participant: device l holds participant l's data (kcagc_fleet.h).
    if (fleet_.kcagc_participants == nullptr || setup_.id >= fleet_.kcagc_participants->size()) {
      return Status::InvalidArgument();
    }
    kcagc_role_ = std::make_unique<kcagc::ParticipantRole>(setup_.id, (*fleet_.kcagc_participants)[setup_.id],
                                                           node_->credentials(), node_->key_drbg());
    kcagc_role_->SetPairKeySource(pair_keys);
    NODEFL_TRY(session_->AddRole(*kcagc_role_));
#else
    return Status::Unimplemented();  // built with NODEFL_WITH_KCAGC=OFF
#endif
  }
  return Status::Ok();
}

bool EmulatedDevice::finished() const {
#if NODEFL_WITH_KCAGC
  if (fleet_.job == "kcagc") return kcagc_role_ && kcagc_role_->finished();
#endif
  return node_ && node_->finished();
}

void EmulatedDevice::Start() {
  asio::co_spawn(strand_, [self = shared_from_this()] { return self->Run(); }, asio::detached);
}

void EmulatedDevice::Stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopping_ = true;
    if (self->frozen_) self->CloseSocket();  // it would never write its Goodbye
    if (self->pump_ && self->pump_->state() == client::PumpState::kOpen &&
        self->session_->state() == device::SessionState::kReady) {
      self->pump_->Close("emulator finished").IgnoreError();
    }
    self->Wake();
    self->poll_timer_.cancel();
    self->fault_timer_.cancel();
  });
}

void EmulatedDevice::Freeze() {
  asio::post(strand_, [self = shared_from_this()] { self->frozen_ = true; });
}

void EmulatedDevice::Kill() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopping_ || self->failed_ || self->dead_) return;
    if (self->finished()) {
      // Its part of the job is done: a kill now would test nothing.
      self->fleet_.stats->faults_kill_missed.fetch_add(1);
      return;
    }
    self->dead_ = true;
    self->was_killed_ = true;
    self->fleet_.stats->faults_killed.fetch_add(1);
    self->CloseSocket();  // no Goodbye, no close_notify: the server sees the connection drop
    self->poll_timer_.cancel();
    self->Wake();
  });
}

bool EmulatedDevice::ReachedPhase(FaultPhase phase) const {
  switch (phase) {
    case FaultPhase::kNone:
      return connection_up_;
    case FaultPhase::kEcho:
      return node_->echo_role().stats().sent > 0;
    case FaultPhase::kEchoKeys:
      return node_->echo_role().keys_reported();
    case FaultPhase::kTree:
      return hct_reported_rounds_ > 0;
    case FaultPhase::kWalks:
      return walk_reported_.forwarded + walk_reported_.finished + walk_reported_.dropped > 0;
    case FaultPhase::kHistograms:
      return histogram_reported_.releases > 0;
    case FaultPhase::kCompare:
      return compare_reported_.messages_sent > 0;
    case FaultPhase::kTrim:
      return trim_reported_.searches_sent + trim_reported_.echoes_sent + mcmc_reported_.messages_sent > 0;
    case FaultPhase::kTrain:
      return train_epochs_reported_ > 0;
    case FaultPhase::kAggregate:
      return secagg_sealed_reported_ > 0;
  }
  return false;
}

void EmulatedDevice::MaybeScheduleKill() {
  if (fleet_.faults == nullptr || !setup_.faults.kill || kill_scheduled_ || !ReachedPhase(fleet_.faults->kill_phase)) {
    return;
  }
  kill_scheduled_ = true;
  fault_timer_.expires_after(fleet_.faults->kill_delay);
  fault_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->Kill();
  });
}

WireFault EmulatedDevice::WireDraw(std::vector<uint8_t>& bytes, size_t size) {
  if (fleet_.faults == nullptr || size == 0) return WireFault::kNone;
  const WireFault fault = DrawWireFault(*fleet_.faults, dice_);
  switch (fault) {
    case WireFault::kNone:
      break;
    case WireFault::kDrop:
      fleet_.stats->faults_dropped.fetch_add(1);
      break;
    case WireFault::kCut:
      fleet_.stats->faults_cut.fetch_add(1);
      break;
    case WireFault::kCorrupt: {
      fleet_.stats->faults_corrupted.fetch_add(1);
      const uint64_t r = dice_.Next();
      bytes[r % size] ^= static_cast<uint8_t>(1u << ((r >> 32) % 8));
      break;
    }
  }
  return fault;
}

asio::awaitable<void> EmulatedDevice::WaitWhileFrozen() {
  asio::steady_timer pause(strand_);
  while (frozen_ && !stopping_ && socket_ && socket_->is_open()) {
    pause.expires_after(std::chrono::milliseconds(20));
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void EmulatedDevice::Wake() { wake_.Wake(); }

asio::awaitable<bool> EmulatedDevice::Connect() {
  asio::steady_timer pause(strand_);
  while (!fleet_.gate->TryEnter()) {
    pause.expires_after(std::chrono::milliseconds(5));
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopping_) co_return false;
  }
  fleet_.stats->connecting.fetch_add(1);
  const auto started = Clock::now();
  tcp::socket socket(strand_);
  boost::system::error_code ec;
  co_await socket.async_connect(fleet_.server, asio::redirect_error(asio::use_awaitable, ec));
  bool ok = false;
  if (ec) {
    last_error_ = "connect: " + ec.message();
  } else {
    socket.set_option(tcp::no_delay(true), ec);
    socket_ = std::make_unique<tcp::socket>(std::move(socket));
    Status st = EnsurePump();
    if (st.ok()) st = pump_->Connect(NowMicros());
    if (st.ok()) st = co_await Handshake();
    if (st.ok()) {
      ok = true;
      fleet_.stats->handshake_us_total.fetch_add(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count()));
    } else {
      last_error_ = std::string("tls handshake: ") + st.str() + " " +
                    (endpoint_ ? endpoint_->last_error_text() : "");
      // The pump starts the session when the handshake completes; that
      // failing is not worth a retry.
      session_start_failed_ = pump_ && pump_->failure_layer() == client::PumpLayer::kSession;
      CloseSocket();
    }
  }
  fleet_.stats->connecting.fetch_sub(1);
  fleet_.gate->Leave();
  co_return ok;
}

asio::awaitable<void> EmulatedDevice::Run() {
  auto self = shared_from_this();
  uint32_t attempts = 0;
  bool ever_connected = false;
  while (!stopping_ && !failed_) {
    if (dead_) {
      // Killed by the fault plan: silent until revived, or for good.
      if (!fleet_.faults->revive_after) {
        killed_for_good_ = true;
        Fail(std::string("killed by the fault plan (at ") + FaultPhaseText(fleet_.faults->kill_phase) + ")");
        break;
      }
      fault_timer_.expires_after(*fleet_.faults->revive_after);
      boost::system::error_code ec;
      co_await fault_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) break;
      dead_ = false;
      fleet_.stats->faults_revived.fetch_add(1);
      continue;  // reconnects and resumes its session with its token
    }
    if (!co_await Connect()) {
      if (stopping_) break;
      if (session_start_failed_) {
        Fail(std::string("session start: ") + pump_->status().str());
        break;
      }
      fleet_.stats->connect_failures.fetch_add(1);
      if (++attempts >= fleet_.max_connect_attempts) {
        Fail("gave up connecting: " + last_error_);
        break;
      }
      asio::steady_timer backoff(strand_, std::chrono::milliseconds(100 * attempts));
      boost::system::error_code ec;
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    attempts = 0;
    if (ever_connected) fleet_.stats->reconnects.fetch_add(1);
    if (!ever_connected) fleet_.stats->connected.fetch_add(1);
    ever_connected = true;
    connection_up_ = true;
    ++connection_epoch_;
    MaybeScheduleKill();  // a kill by time counts from the first connection
    asio::co_spawn(strand_, Writer(), asio::detached);
    asio::co_spawn(strand_, Poller(), asio::detached);
    co_await Reader();
    connection_up_ = false;
    Wake();
    poll_timer_.cancel();
    CloseSocket();
    NoteProgress();
    if (frozen_ && !stopping_) {
      // A hung device does not come back when the server drops it.
      Fail("frozen (the emulator hung it on purpose)");
      break;
    }
    if (session_->state() == device::SessionState::kClosed && !stopping_) {
      // A finished device may be sent away (the server ends after its job);
      // otherwise the server refused us or the protocol broke, and retrying
      // would not help.
      if (!finished()) Fail(std::string("session closed: ") + session_->last_error());
      break;
    }
  }
}

asio::awaitable<void> EmulatedDevice::Reader() {
  std::vector<uint8_t> chunk(kSocketReadChunk);
  while (connection_up_) {
    if (frozen_) {
      co_await WaitWhileFrozen();
      if (stopping_ || !socket_->is_open()) co_return;
    }
    boost::system::error_code ec;
    const size_t n = co_await socket_->async_read_some(asio::buffer(chunk),
                                                       asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      last_error_ = std::string("read: ") + Status::Aborted().str();
      co_return;
    }
    if (fleet_.faults != nullptr) {
      const WireFault fault = WireDraw(chunk, n);
      if (fault == WireFault::kCut) {
        last_error_ = "read: connection cut by the fault plan";
        CloseSocket();
        co_return;
      }
      if (fault == WireFault::kDrop) continue;
      if (setup_.faults.slow) {
        // A slow board: the bytes are handled only after the delay.
        fleet_.stats->faults_slow_waits.fetch_add(1);
        asio::steady_timer slow(strand_, fleet_.faults->slow_delay);
        co_await slow.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (!connection_up_ || dead_) co_return;
      }
    }
    ConstByteSpan pending(chunk.data(), n);
    while (!pending.empty() && connection_up_ && !frozen_ && !dead_) {
      size_t consumed = 0;
      const Status st = pump_->OnReceived(pending, NowMicros(), &consumed);
      pending = pending.subspan(consumed);
      if (!st.ok()) {
        last_error_ = PumpError("read", st);
        Wake();
        co_return;
      }
      if (pump_->peer_closed()) co_return;  // the server closed cleanly
      NoteProgress();
      Wake();
      if (!pending.empty()) {
        // The pump's output is full: the writer drains it and wakes us. The
        // poll interval only bounds the wait should no output be pending
        // (the pump's contract says there is).
        co_await drained_.WaitUntil(Clock::now() + fleet_.poll_interval);
        if (!socket_->is_open()) co_return;  // the writer failed and closed it
      }
    }
  }
}

asio::awaitable<void> EmulatedDevice::Writer() {
  auto self = shared_from_this();
  const uint32_t epoch = connection_epoch_;
  std::vector<uint8_t> batch;
  while (connection_up_ && epoch == connection_epoch_) {
    if (frozen_) {
      co_await WaitWhileFrozen();
      if (stopping_ || !socket_->is_open()) co_return;
    }
    const ConstByteSpan out = pump_->PendingOutput();
    if (out.empty()) {
      // The pump queued Goodbye and close_notify; both are written.
      if (stopping_ && pump_->state() == client::PumpState::kClosed) {
        CloseSocket();
        co_return;
      }
      co_await wake_.Wait();
      continue;
    }
    // Copy first: the pump keeps appending while the socket write waits.
    batch.assign(out.begin(), out.end());
    const Status consumed = pump_->ConsumeOutput(out.size(), NowMicros());
    drained_.Wake();  // the pump has room again for what the reader holds
    if (fleet_.faults != nullptr) {
      const WireFault fault = WireDraw(batch, batch.size());
      if (fault == WireFault::kCut) {
        last_error_ = "write: connection cut by the fault plan";
        CloseSocket();
        co_return;
      }
      if (fault == WireFault::kDrop) batch.clear();  // lost on the wire
    }
    boost::system::error_code ec;
    co_await asio::async_write(*socket_, asio::buffer(batch), asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !consumed.ok()) {
      if (!consumed.ok()) last_error_ = PumpError("write", consumed);
      CloseSocket();
      co_return;
    }
    // Output space is free again: let the roles continue their bulk work.
    if (connection_up_ && !dead_ && session_->state() == device::SessionState::kReady) {
      if (!pump_->Tick(NowMicros()).ok()) {
        CloseSocket();
        co_return;
      }
      NoteProgress();
    }
  }
}

asio::awaitable<void> EmulatedDevice::Poller() {
  auto self = shared_from_this();
  const uint32_t epoch = connection_epoch_;
  while (connection_up_ && epoch == connection_epoch_ && !stopping_) {
    poll_timer_.expires_after(fleet_.poll_interval);
    boost::system::error_code ec;
    co_await poll_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // A killed device does nothing more, not even with input it already
    // holds (Kill wakes this timer while the connection is still up).
    if (!connection_up_ || dead_ || epoch != connection_epoch_) break;
    if (frozen_) continue;
    const Status polled = pump_->Tick(NowMicros());
    if (!polled.ok()) {
      last_error_ = std::string("poll: ") + polled.str() + " " + session_->last_error();
      CloseSocket();  // the reader sees the failure and the device reconnects
      break;
    }
    Wake();
    NoteProgress();
  }
}

Status EmulatedDevice::EnsurePump() {
  if (pump_) return Status::Ok();
  // The sizes TlsSocket used; the endpoint is reset, not rebuilt, on reconnect.
  tls_inbound_.resize(client::kPumpTlsInboundBytes);
  tls_outbound_.resize(client::kPumpTlsOutboundBytes);
  plaintext_.resize(client::kPumpPlaintextBytes);
  endpoint_ = std::make_unique<tls::TlsEndpoint>();
  const Status st =
      endpoint_->Init(node_->tls_config(), ByteSpan(tls_inbound_), ByteSpan(tls_outbound_), fleet_.server_name.c_str());
  if (!st.ok()) {
    endpoint_.reset();
    return st;
  }
  pump_ = std::make_unique<client::DevicePump>(*endpoint_, *session_, ByteSpan(plaintext_));
  return Status::Ok();
}

asio::awaitable<Status> EmulatedDevice::WritePending(std::vector<uint8_t>& batch) {
  while (true) {
    const ConstByteSpan out = pump_->PendingOutput();
    if (out.empty()) co_return Status::Ok();
    batch.assign(out.begin(), out.end());
    const Status consumed = pump_->ConsumeOutput(out.size(), NowMicros());
    boost::system::error_code ec;
    co_await asio::async_write(*socket_, asio::buffer(batch), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Status::Aborted();
    if (!consumed.ok()) co_return consumed;
  }
}

asio::awaitable<Status> EmulatedDevice::Handshake() {
  std::vector<uint8_t> chunk(kSocketReadChunk);
  std::vector<uint8_t> batch;
  while (true) {
    // Also sends the alert of a failed handshake, as TlsSocket did.
    const Status written = co_await WritePending(batch);
    if (pump_->state() == client::PumpState::kFailed) co_return pump_->status();
    if (!written.ok()) co_return written;
    if (pump_->handshake_done()) co_return Status::Ok();
    boost::system::error_code ec;
    const size_t n = co_await socket_->async_read_some(asio::buffer(chunk),
                                                       asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Status::Aborted();
    ConstByteSpan pending(chunk.data(), n);
    while (!pending.empty()) {
      size_t consumed = 0;
      const Status st = pump_->OnReceived(pending, NowMicros(), &consumed);
      pending = pending.subspan(consumed);
      if (!st.ok()) break;  // the top of the loop sends any alert and returns
      if (!pending.empty()) {
        const Status flushed = co_await WritePending(batch);
        if (!flushed.ok()) co_return flushed;
      }
    }
  }
}

void EmulatedDevice::CloseSocket() {
  if (!socket_) return;
  boost::system::error_code ignored;
  socket_->shutdown(tcp::socket::shutdown_both, ignored);
  socket_->close(ignored);
  drained_.Wake();  // a reader waiting for output room sees the socket closed
}

std::string EmulatedDevice::PumpError(const char* what, Status status) const {
  if (pump_ && pump_->failure_layer() == client::PumpLayer::kSession) {
    return std::string("session: ") + status.str() + " " + session_->last_error();
  }
  return std::string(what) + ": " + status.str();
}

void EmulatedDevice::NoteProgress() {
  {
    const device::DeviceSession::Counters& now = session_->counters();
    device::DeviceSession::Counters& was = session_reported_;
    const auto add = [](uint64_t current, uint64_t& reported, std::atomic<uint64_t>& total) {
      if (current > reported) total.fetch_add(current - reported);
      reported = current;
    };
    add(now.sends_kept, was.sends_kept, fleet_.stats->sends_kept);
    add(now.sends_resent, was.sends_resent, fleet_.stats->sends_resent);
    add(now.sends_unkept, was.sends_unkept, fleet_.stats->sends_unkept);
    add(now.sends_forgotten, was.sends_forgotten, fleet_.stats->sends_forgotten);
    add(now.records_repeated, was.records_repeated, fleet_.stats->records_repeated);
    add(now.relay_duplicates, was.relay_duplicates, fleet_.stats->relay_duplicates);
  }
  // Each stage's results go to the next as soon as it finishes here.
  if (const Status advanced = node_->Advance(); !advanced.ok()) Fail(std::string("roles: ") + advanced.str());
  const auto& s = node_->echo_role().stats();
  if (s.sent < reported_.sent || s.received < reported_.received) reported_ = {};  // a new job began
  fleet_.stats->sealed_sent.fetch_add(s.sent - reported_.sent);
  fleet_.stats->verified_received.fetch_add(s.received - reported_.received);
  fleet_.stats->duplicates.fetch_add(s.duplicates - reported_.duplicates);
  fleet_.stats->rejected.fetch_add(s.rejected - reported_.rejected);
  reported_ = s;
  const auto& h = node_->hct_role().stats();
  if (h.reports > hct_reported_rounds_) {
    fleet_.stats->hct_rounds_reported.fetch_add(h.reports - hct_reported_rounds_);
    hct_reported_rounds_ = h.reports;
  }
  if (h.failures > hct_reported_failures_) {
    fleet_.stats->hct_failures.fetch_add(h.failures - hct_reported_failures_);
    hct_reported_failures_ = h.failures;
  }
  if (const fedwalk::FedWalkWalkRole* walks = node_->walk_role()) {
    const auto& w = walks->stats();
    fleet_.stats->walks_forwarded.fetch_add(w.forwarded - walk_reported_.forwarded);
    fleet_.stats->walks_finished.fetch_add(w.finished - walk_reported_.finished);
    fleet_.stats->walks_dropped.fetch_add(w.dropped - walk_reported_.dropped);
    walk_reported_ = w;
  }
  if (const fedwalk::FedWalkHistogramRole* histograms = node_->histogram_role()) {
    const auto& hs = histograms->stats();
    if (hs.releases < histogram_reported_.releases || hs.failures < histogram_reported_.failures) {
      histogram_reported_ = {};  // a new job began
    }
    fleet_.stats->histogram_releases.fetch_add(hs.releases - histogram_reported_.releases);
    fleet_.stats->histogram_failures.fetch_add(hs.failures - histogram_reported_.failures);
    histogram_reported_ = hs;
  }
  if (const compare::SecureCompareRole* compares = node_->compare_role()) {
    const auto& c = compares->stats();
    fleet_.stats->compare_done.fetch_add(c.done - compare_reported_.done);
    fleet_.stats->compare_aborted.fetch_add(c.aborted - compare_reported_.aborted);
    fleet_.stats->compare_messages.fetch_add(c.messages_sent - compare_reported_.messages_sent);
    fleet_.stats->compare_bytes.fetch_add(c.bytes_sent - compare_reported_.bytes_sent);
    compare_reported_ = c;
  }
  if (node_->trim_bound() && !trim_bound_counted_ && !failed_) {
    trim_bound_counted_ = true;
    fleet_.stats->trim_bound.fetch_add(1);
  }
  if (const lumos::LumosTrimRole* trims = node_->trim_role()) {
    const auto& t = trims->stats();
    if (t.steps < trim_reported_.steps) trim_reported_ = {};  // a new job began
    fleet_.stats->trim_messages.fetch_add((t.searches_sent + t.echoes_sent) -
                                          (trim_reported_.searches_sent + trim_reported_.echoes_sent));
    fleet_.stats->trim_steps.fetch_add(t.steps - trim_reported_.steps);
    trim_reported_ = t;
  }
  if (const lumos::LumosTrainRole* train = node_->train_role()) {
    const uint32_t epochs = train->stats().epochs;
    if (epochs >= train_epochs_reported_) fleet_.stats->train_epochs.fetch_add(epochs - train_epochs_reported_);
    train_epochs_reported_ = epochs;
  }
  if (const lumos::LumosMcmcRole* mcmc = node_->mcmc_role()) {
    const auto& m = mcmc->stats();
    if (m.messages_sent < mcmc_reported_.messages_sent) mcmc_reported_ = {};  // a new job began
    fleet_.stats->trim_messages.fetch_add(m.messages_sent - mcmc_reported_.messages_sent);
    fleet_.stats->trim_steps.fetch_add(m.moves - mcmc_reported_.moves);
    mcmc_reported_ = m;
  }
  if (const secagg::SecureAggregateRole* secagg = node_->secagg_role()) {
    // Counters restart with each job the role begins.
    const auto& c = secagg->client().stats();
    const uint32_t sealed = secagg->stats().sealed_sent;
    if (c.completed < secagg_reported_.completed || sealed < secagg_sealed_reported_) {
      secagg_reported_ = {};
      secagg_sealed_reported_ = 0;
    }
    fleet_.stats->secagg_completed.fetch_add(c.completed - secagg_reported_.completed);
    fleet_.stats->secagg_bytes_to_server.fetch_add(c.bytes_to_server - secagg_reported_.bytes_to_server);
    fleet_.stats->secagg_refused.fetch_add((c.records_refused + c.messages_refused) -
                                           (secagg_reported_.records_refused + secagg_reported_.messages_refused));
    fleet_.stats->secagg_sealed.fetch_add(sealed - secagg_sealed_reported_);
    secagg_reported_ = c;
    secagg_sealed_reported_ = sealed;
  }
#if NODEFL_WITH_KCAGC
  if (kcagc_role_) {
    const auto& k = kcagc_role_->stats();
    if (k.instructions < kcagc_reported_.instructions) kcagc_reported_ = {};  // a new job began
    fleet_.stats->kcagc_instructions.fetch_add(k.instructions - kcagc_reported_.instructions);
    fleet_.stats->kcagc_contributions.fetch_add(k.contributions - kcagc_reported_.contributions);
    kcagc_reported_ = k;
  }
#endif
  MaybeScheduleKill();
  if (finished() && !counted_finished_) {
    if (node_->hct_role().finished()) fleet_.stats->hct_codebook_rows.fetch_add(h.codebook_rows_kept);
    counted_finished_ = true;
    fleet_.stats->finished.fetch_add(1);
  }
}

}  // namespace nodefl::emulator
