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
#include "nodefl/crypto/rng.h"
#include "nodefl/compare/compare_sizing.h"
#include "nodefl/lumos/mcmc_binding.h"
#include "nodefl/lumos/trim_binding.h"
#include "nodefl/core/storage_plan.h"
#include "nodefl/echo/echo_sizing.h"
#include "nodefl/fedwalk/hct_sizing.h"
#include "nodefl/fedwalk/histogram_sizing.h"
#include "nodefl/fedwalk/walk_sizing.h"
#include "nodefl/platform/host_platform.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::emulator {
namespace {

// Ciphertext read from the socket at a time (what TlsSocket read before the
// pump joined TLS and the session).
constexpr size_t kSocketReadChunk = 4096;
constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
// Room for several frames, so a role can send a batch of sealed messages per
// poll without waiting for the socket.
constexpr size_t kOutputFrames = 4;
// Kept sends (RelaySends and JobData uploads) until the server acknowledges
// them (24.7 kB). It is also the device's send window, and roles send only
// while a largest send still fits: 20.6 KiB in flight, more than the output buffer holds. With two
// (4.1 KiB in flight) FedWalk devices forwarded so slowly that their walk
// queues filled and walks were dropped and issued again.
constexpr size_t kUnackedBytes = 6 * device::UnackedSends::kMaxEntryBytes;

// One entropy source for every device's DRBG; it must outlive them all.
const EntropySource& HostEntropy() {
  static const EntropySource source{&host::HostEntropyFill, nullptr};
  return source;
}

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
  const uint8_t personal[4] = {static_cast<uint8_t>(setup_.id), static_cast<uint8_t>(setup_.id >> 8),
                               static_cast<uint8_t>(setup_.id >> 16), static_cast<uint8_t>(setup_.id >> 24)};
  NODEFL_TRY(drbg_.SeedFromEntropy(HostEntropy(), ConstByteSpan(personal)));
  NODEFL_TRY(credentials_.ShareCaChain(*fleet_.ca));
  NODEFL_TRY(credentials_.LoadOwnIdentity(ConstByteSpan(setup_.certificate_der),
                                          ConstByteSpan(setup_.private_key_der)));
  // The key material now lives in MbedTLS's contexts; drop our copies.
  std::fill(setup_.private_key_der.begin(), setup_.private_key_der.end(), 0);
  setup_.private_key_der.clear();
  setup_.certificate_der.clear();
  NODEFL_TRY(tls_config_.Init(tls::TlsRole::kClient, credentials_, &crypto::DrbgRandom, &drbg_));

  frame_buffer_.resize(kMaxFrame);
  output_buffer_.resize(kOutputFrames * kMaxFrame);
  unacked_buffer_.resize(kUnackedBytes);
  device::SessionOptions options;
  options.device_id = setup_.id;
  // Session events go to stderr from the level the fleet chose (warnings
  // and errors by default, so that ten thousand healthy devices stay quiet).
  options.log.write = &host::HostStderrLog;
  options.log.min_level = fleet_.device_log_level;
  session_ = std::make_unique<device::DeviceSession>(
      options,
      device::SessionBuffers{ByteSpan(frame_buffer_), ByteSpan(output_buffer_), ByteSpan(unacked_buffer_)});

  // One arena per device, sized by the SDK from the roles this device
  // serves (docs/porting.md, "Sizing a device"); each role is carved from it.
  const uint32_t neighbours = static_cast<uint32_t>(setup_.neighbours.size());
  const uint32_t degree = std::max<uint32_t>(setup_.degree, neighbours);
  const bool strict_fedwalk =
      fleet_.job == "fedwalk-histograms" || (fleet_.job == "fedwalk" && fleet_.fedwalk_mode == "strict");
  const bool paper_walks = fleet_.job == "fedwalk" && !strict_fedwalk;
  const bool trims = fleet_.job == "lumos-trees";
  const bool compares = fleet_.job == "secure-compare" || trims;
  echo::EchoSizing echo_sizing;
  echo_sizing.neighbours = neighbours;
  fedwalk::HctSizing hct_sizing;
  hct_sizing.neighbours = neighbours;
  hct_sizing.codebook_entries_per_neighbour = fleet_.codebook_entries_per_neighbour;
  hct_sizing.codebook_spare_entries = FleetSetup::kCodebookSpareEntries;
  hct_sizing.kept_vertex_count = fleet_.keep_tree_and_bin_plan ? fleet_.vertex_count : 0;
  fedwalk::HistogramSizing histogram_sizing;
  histogram_sizing.neighbours = neighbours;
  histogram_sizing.max_clusters = fleet_.vertex_count;
  fedwalk::WalkSizing walk_sizing;
  walk_sizing.neighbours = neighbours;
  walk_sizing.peer_cache = fleet_.walk_peer_cache;
  walk_sizing.base_slots = fleet_.walk_slots;
  walk_sizing.walk_length = fleet_.walk_length_capacity;
  walk_sizing.vertex_count = fleet_.vertex_count;
  compare::CompareSizing compare_sizing;
  compare_sizing.neighbours = neighbours;
  compare_sizing.contexts = fleet_.compare_contexts;
  compare_sizing.slots_per_context = fleet_.compare_slots;

  StoragePlan device_plan;
  const auto add = [&device_plan](const Result<StoragePlan>& role_plan) -> Status {
    if (!role_plan.ok()) return role_plan.status();
    return device_plan.Then(*role_plan);
  };
  NODEFL_TRY(add(echo::Plan(echo_sizing)));
  NODEFL_TRY(add(fedwalk::Plan(hct_sizing)));
  if (strict_fedwalk) NODEFL_TRY(add(fedwalk::Plan(histogram_sizing)));
  if (paper_walks) NODEFL_TRY(add(fedwalk::Plan(walk_sizing)));
  if (compares) NODEFL_TRY(add(compare::Plan(compare_sizing)));
  lumos::TrimSizing trim_sizing;
  trim_sizing.neighbours = neighbours;
  if (trims) NODEFL_TRY(add(lumos::Plan(trim_sizing)));
  lumos::McmcSizing mcmc_sizing;
  mcmc_sizing.neighbours = neighbours;
  mcmc_sizing.contexts = fleet_.compare_contexts;
  if (trims) NODEFL_TRY(add(lumos::Plan(mcmc_sizing)));
  arena_buffer_.resize(device_plan.ArenaBytes());
  Arena arena{ByteSpan(arena_buffer_)};

  NODEFL_TRY_ASSIGN(echo_storage_, echo::Carve(arena, echo_sizing));
  for (uint32_t i = 0; i < neighbours; ++i) echo_storage_.peers[i].id = setup_.neighbours[i];
  role_ = std::make_unique<echo::NeighbourEchoRole>(setup_.id, echo_storage_.peers.span(), credentials_,
                                                     &crypto::DrbgRandom, &drbg_);
  NODEFL_TRY(role_->Init());
  NODEFL_TRY(session_->AddRole(*role_));

  const uint8_t noise_personal[5] = {'n', personal[0], personal[1], personal[2], personal[3]};
  if (fleet_.noise_seed != 0) {
    NODEFL_TRY(noise_drbg_.SeedDeterministic(fleet_.noise_seed, setup_.id));
  } else {
    NODEFL_TRY(noise_drbg_.SeedFromEntropy(HostEntropy(), ConstByteSpan(noise_personal)));
  }
  ledger_entries_.resize(8);
  ledger_ = std::make_unique<PrivacyLedger>(Span<LedgerEntry>(ledger_entries_), fleet_.budget);
  NODEFL_TRY_ASSIGN(fedwalk::HctStorage hct_storage, fedwalk::Carve(arena, hct_sizing));
  for (uint32_t i = 0; i < neighbours; ++i) hct_storage.neighbours[i].id = setup_.neighbours[i];
  hct_role_ = std::make_unique<fedwalk::FedWalkHctRole>(setup_.id, hct_storage, noise_drbg_, *ledger_);
  NODEFL_TRY(hct_role_->Init(degree, fleet_.max_neighbours == 0 ? fedwalk::FedWalkHctRole::kNoNeighbourCap
                                                                 : fleet_.max_neighbours));
  NODEFL_TRY(session_->AddRole(*hct_role_));

  if (strict_fedwalk) {
    NODEFL_TRY_ASSIGN(fedwalk::HistogramStorage hs, fedwalk::Carve(arena, histogram_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) hs.neighbours[i].id = setup_.neighbours[i];
    histogram_role_ = std::make_unique<fedwalk::FedWalkHistogramRole>(setup_.id, hs, noise_drbg_, *ledger_);
    NODEFL_TRY(histogram_role_->Init(degree, fleet_.max_neighbours == 0
                                                 ? fedwalk::FedWalkHistogramRole::kNoNeighbourCap
                                                 : fleet_.max_neighbours));
    NODEFL_TRY(session_->AddRole(*histogram_role_));
  }
  if (paper_walks) {
    NODEFL_TRY_ASSIGN(walk_storage_, fedwalk::Carve(arena, walk_sizing));
    // Walk decisions and encodings draw from the noise DRBG; ECDH blinding
    // from the TLS one (crypto/rng.h asks for separate generators).
    walk_role_ = std::make_unique<fedwalk::FedWalkWalkRole>(setup_.id, walk_storage_.storage, credentials_,
                                                          &crypto::DrbgRandom, &drbg_, noise_drbg_, *ledger_);
    if (fleet_.shared_pair_keys != nullptr) walk_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    NODEFL_TRY(session_->AddRole(*walk_role_));
  }
  if (compares) {
    NODEFL_TRY_ASSIGN(compare_storage_, compare::Carve(arena, compare_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) compare_storage_.peers[i].id = setup_.neighbours[i];
    compare_role_ = std::make_unique<compare::SecureCompareRole>(setup_.id, compare_storage_.peers.span(),
                                                                 compare_storage_.contexts.span(), credentials_,
                                                                 &crypto::DrbgRandom, &drbg_);
    if (fleet_.shared_pair_keys != nullptr) compare_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    compare_role_->set_hand_over_keys(trims);
    NODEFL_TRY(compare_role_->Init());
    NODEFL_TRY(session_->AddRole(*compare_role_));
  }
  if (trims) {
    NODEFL_TRY_ASSIGN(trim_storage_, lumos::Carve(arena, trim_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) trim_storage_.peers[i].id = setup_.neighbours[i];
    trim_role_ = std::make_unique<lumos::LumosTrimRole>(setup_.id, trim_storage_.peers.span());
    NODEFL_TRY(trim_role_->Init());
    NODEFL_TRY(session_->AddRole(*trim_role_));
    NODEFL_TRY_ASSIGN(mcmc_storage_, lumos::Carve(arena, mcmc_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) {
      mcmc_storage_.peers[i].id = mcmc_storage_.neighbour_keys[i].id = setup_.neighbours[i];
    }
    mcmc_role_ = std::make_unique<lumos::LumosMcmcRole>(
        setup_.id, mcmc_storage_.peers.span(), mcmc_storage_.neighbour_keys.span(), mcmc_storage_.cache.span(),
        mcmc_storage_.contexts.span(), credentials_, &crypto::DrbgRandom, &drbg_);
    if (fleet_.shared_pair_keys != nullptr) mcmc_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    NODEFL_TRY(mcmc_role_->Init());
    NODEFL_TRY(session_->AddRole(*mcmc_role_));
  }
  if (trims && fleet_.lumos_train) {
    train_peers_.resize(neighbours);
    train_keys_.resize(neighbours);
    for (uint32_t i = 0; i < neighbours; ++i) train_peers_[i].id = train_keys_[i].id = setup_.neighbours[i];
    // Room for the widest model the fleet was told to expect (GAT needs
    // more than GCN) on a tree of every neighbour.
    lumos::TrainParameters widest;
    widest.layer = 2;
    widest.features = fleet_.train_features;
    widest.hidden = static_cast<uint16_t>(fleet_.train_hidden);
    widest.out = static_cast<uint16_t>(fleet_.train_out);
    // GAT keeps attention per head and edge: the most heads any shape of
    // these widths can have (heads divide both widths).
    widest.heads = static_cast<uint8_t>(std::min<uint32_t>(255, std::min(fleet_.train_hidden, fleet_.train_out)));
    widest.classes = static_cast<uint16_t>(fleet_.train_classes);
    // ... for either task (link: no classifier, but partners and their
    // embeddings).
    lumos::TrainParameters widest_link = widest;
    widest_link.task = lumos::TrainTask::kLink;
    widest_link.classes = 0;
    // ... and with secure sum's input vector when the devices have room for
    // mask peers.
    const uint32_t mask_peers = fleet_.train_secagg_peers;
    widest.secure_sum = widest_link.secure_sum = mask_peers > 0;
    const uint32_t partners = fleet_.train_partners;
    train_memory_.resize(std::max(lumos::TrainRoleMemory(widest, neighbours, neighbours),
                                  lumos::TrainRoleMemory(widest_link, neighbours, neighbours, partners)));
    train_partners_.resize(partners);
    train_partner_keys_.resize(partners);
    train_role_ = std::make_unique<lumos::LumosTrainRole>(
        setup_.id, Span<lumos::TrainPeer>(train_peers_), Span<roles::KeyedPeer>(train_keys_),
        ByteSpan(train_memory_), credentials_, &crypto::DrbgRandom, &drbg_, noise_drbg_, *ledger_);
    if (fleet_.shared_pair_keys != nullptr) train_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    train_role_->SetLinkMemory(Span<lumos::TrainPeer>(train_partners_), Span<roles::KeyedPeer>(train_partner_keys_));
    if (mask_peers > 0) {
      train_agg_peers_.resize(mask_peers);
      train_agg_shares_.resize(2 * size_t{mask_peers});
      train_agg_points_.resize(mask_peers);
      train_agg_keys_.resize(mask_peers);
      train_agg_held_.resize(mask_peers);  // one per mask peer: none is ever dropped
      lumos::TrainSecureSumMemory memory;
      memory.peers = Span<secagg::AggregationPeer>(train_agg_peers_);
      memory.shares = Span<secagg::Share>(train_agg_shares_);
      memory.points = Span<uint64_t>(train_agg_points_);
      memory.keys = Span<roles::KeyedPeer>(train_agg_keys_);
      memory.held = Span<secagg::HeldMessage>(train_agg_held_);
      // The TLS DRBG, as the secure-aggregate role's client: round keys and
      // shares are key material, not noise.
      train_role_->SetSecureSumMemory(memory, drbg_);
    }
    NODEFL_TRY(train_role_->Init());
    train_role_->SetData(Span<const float>(setup_.features), setup_.label);
    NODEFL_TRY(session_->AddRole(*train_role_));
  }
  if (fleet_.job == "secure-aggregate") {
    // Memory for the widest aggregation the server may run (FleetSetup).
    const uint32_t peers = fleet_.secagg_peers;
    secagg_peers_.resize(peers);
    secagg_shares_.resize(2 * size_t{peers});
    secagg_points_.resize(peers);
    secagg_vector_.resize(fleet_.secagg_length);
    secagg_keys_.resize(peers);
    secagg_held_.resize(peers);  // one per mask peer: none is ever dropped
    secagg::SecureAggregateMemory memory;
    memory.aggregation = secagg::AggregationMemory{
        Span<secagg::AggregationPeer>(secagg_peers_), Span<secagg::Share>(secagg_shares_),
        Span<uint64_t>(secagg_points_), Span<uint32_t>(secagg_vector_)};
    memory.keys = Span<roles::KeyedPeer>(secagg_keys_);
    memory.held = Span<secagg::HeldMessage>(secagg_held_);
    secagg_role_ = std::make_unique<secagg::SecureAggregateRole>(setup_.id, memory, credentials_, drbg_);
    if (fleet_.shared_pair_keys != nullptr) secagg_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    NODEFL_TRY(session_->AddRole(*secagg_role_));
  }
  if (fleet_.job == "kcagc") {
#if NODEFL_WITH_KCAGC
    // A kCAGC participant: device l holds participant l's data (kcagc_fleet.h).
    if (fleet_.kcagc_participants == nullptr || setup_.id >= fleet_.kcagc_participants->size()) {
      return Status::InvalidArgument();
    }
    kcagc_role_ = std::make_unique<kcagc::ParticipantRole>(setup_.id, (*fleet_.kcagc_participants)[setup_.id],
                                                           credentials_, drbg_);
    if (fleet_.shared_pair_keys != nullptr) kcagc_role_->SetPairKeySource(fleet_.shared_pair_keys->source());
    NODEFL_TRY(session_->AddRole(*kcagc_role_));
#else
    return Status::Unimplemented();  // built with NODEFL_WITH_KCAGC=OFF
#endif
  }
  return Status::Ok();
}

std::vector<std::pair<uint32_t, bool>> EmulatedDevice::LumosOrientation() const {
  std::vector<std::pair<uint32_t, bool>> out;
  if (mcmc_role_ && mcmc_role_->finished()) {
    for (const lumos::McmcPeer& p : mcmc_role_->peers()) out.push_back({p.id, p.keep});
  } else if (trim_role_) {
    for (const lumos::TrimPeer& p : trim_role_->peers()) out.push_back({p.id, p.keep});
  }
  return out;
}

bool EmulatedDevice::finished() const {
  if (histogram_role_) return histogram_role_->finished();
  if (fleet_.job == "fedwalk") return walk_role_ && walk_role_->finished();
  if (fleet_.job == "secure-compare") return compare_role_ && compare_role_->finished();
  if (fleet_.job == "secure-aggregate") return secagg_role_ && secagg_role_->finished();
#if NODEFL_WITH_KCAGC
  if (fleet_.job == "kcagc") return kcagc_role_ && kcagc_role_->finished();
#endif
  if (fleet_.job == "lumos-trees") {
    if (train_role_) return train_role_->finished();
    return (trim_role_ && trim_role_->finished()) || (mcmc_role_ && mcmc_role_->finished());
  }
  if (fleet_.job == "fedwalk-hct") return hct_role_ && hct_role_->finished();
  return role_ && role_->finished();
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
      return role_ && role_->stats().sent > 0;
    case FaultPhase::kEchoKeys:
      return role_ && role_->keys_reported();
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
      endpoint_->Init(tls_config_, ByteSpan(tls_inbound_), ByteSpan(tls_outbound_), fleet_.server_name.c_str());
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
  const auto& s = role_->stats();
  if (s.sent < reported_.sent || s.received < reported_.received) reported_ = {};  // a new job began
  fleet_.stats->sealed_sent.fetch_add(s.sent - reported_.sent);
  fleet_.stats->verified_received.fetch_add(s.received - reported_.received);
  fleet_.stats->duplicates.fetch_add(s.duplicates - reported_.duplicates);
  fleet_.stats->rejected.fetch_add(s.rejected - reported_.rejected);
  reported_ = s;
  const auto& h = hct_role_->stats();
  if (h.reports > hct_reported_rounds_) {
    fleet_.stats->hct_rounds_reported.fetch_add(h.reports - hct_reported_rounds_);
    hct_reported_rounds_ = h.reports;
  }
  if (h.failures > hct_reported_failures_) {
    fleet_.stats->hct_failures.fetch_add(h.failures - hct_reported_failures_);
    hct_reported_failures_ = h.failures;
  }
  if (walk_role_) {
    // The walk job needs what the HCT job left on the device: bind it as
    // soon as that job is done (before the walk job's first message), and
    // again when the server ran the HCT job anew (it started the plan over,
    // e.g. after a restart): the walk job of the old plan is dropped.
    if (hct_role_->finished() && hct_role_->job_id() != walk_bound_hct_job_) {
      walk_bound_hct_job_ = hct_role_->job_id();
      walk_role_->Abandon();
      const Status bound = walk_role_->Init(fedwalk::WalkInputsFrom(*hct_role_));
      if (!bound.ok()) Fail(std::string("walk role: ") + bound.str());
    }
    const auto& w = walk_role_->stats();
    fleet_.stats->walks_forwarded.fetch_add(w.forwarded - walk_reported_.forwarded);
    fleet_.stats->walks_finished.fetch_add(w.finished - walk_reported_.finished);
    fleet_.stats->walks_dropped.fetch_add(w.dropped - walk_reported_.dropped);
    walk_reported_ = w;
  }
  if (histogram_role_) {
    const auto& hs = histogram_role_->stats();
    if (hs.releases < histogram_reported_.releases || hs.failures < histogram_reported_.failures) {
      histogram_reported_ = {};  // a new job began
    }
    fleet_.stats->histogram_releases.fetch_add(hs.releases - histogram_reported_.releases);
    fleet_.stats->histogram_failures.fetch_add(hs.failures - histogram_reported_.failures);
    histogram_reported_ = hs;
  }
  if (compare_role_) {
    const auto& c = compare_role_->stats();
    fleet_.stats->compare_done.fetch_add(c.done - compare_reported_.done);
    fleet_.stats->compare_aborted.fetch_add(c.aborted - compare_reported_.aborted);
    fleet_.stats->compare_messages.fetch_add(c.messages_sent - compare_reported_.messages_sent);
    fleet_.stats->compare_bytes.fetch_add(c.bytes_sent - compare_reported_.bytes_sent);
    compare_reported_ = c;
  }
  if (trim_role_) {
    // Trimming starts from what the comparisons left on the device: bind
    // it as soon as that job is done (before the trimming job's first
    // message, which the server sends only after every device reported).
    if (!trim_bound_ && compare_role_ && compare_role_->finished()) {
      trim_bound_ = true;
      // Both stages' roles are bound; the plan runs one. The trimming role
      // takes the comparison keys over; the MCMC role needs the outcomes only.
      Status bound = lumos::BindGreedy(*compare_role_, setup_.id, trim_storage_.peers.span(), *trim_role_);
      if (bound.ok()) bound = lumos::BindMcmcGreedy(*compare_role_, mcmc_storage_.peers.span(), *mcmc_role_);
      if (bound.ok()) {
        fleet_.stats->trim_bound.fetch_add(1);
      } else {
        Fail(std::string("trim role: ") + bound.str());
      }
    }
    const auto& t = trim_role_->stats();
    if (t.steps < trim_reported_.steps) trim_reported_ = {};  // a new job began
    fleet_.stats->trim_messages.fetch_add((t.searches_sent + t.echoes_sent) -
                                          (trim_reported_.searches_sent + trim_reported_.echoes_sent));
    fleet_.stats->trim_steps.fetch_add(t.steps - trim_reported_.steps);
    trim_reported_ = t;
  }
  if (train_role_ && !train_bound_ &&
      ((trim_role_ && trim_role_->finished()) || (mcmc_role_ && mcmc_role_->finished()))) {
    // Training starts from the trees the trimming stage left.
    train_bound_ = true;
    const std::vector<std::pair<uint32_t, bool>> kept = LumosOrientation();
    for (size_t i = 0; i < kept.size() && i < train_peers_.size(); ++i) train_peers_[i].keep = kept[i].second;
    train_role_->Bind();
  }
  if (train_role_) {
    const uint32_t epochs = train_role_->stats().epochs;
    if (epochs >= train_epochs_reported_) fleet_.stats->train_epochs.fetch_add(epochs - train_epochs_reported_);
    train_epochs_reported_ = epochs;
  }
  if (mcmc_role_) {
    const auto& m = mcmc_role_->stats();
    if (m.messages_sent < mcmc_reported_.messages_sent) mcmc_reported_ = {};  // a new job began
    fleet_.stats->trim_messages.fetch_add(m.messages_sent - mcmc_reported_.messages_sent);
    fleet_.stats->trim_steps.fetch_add(m.moves - mcmc_reported_.moves);
    mcmc_reported_ = m;
  }
  if (secagg_role_) {
    // Counters restart with each job the role begins.
    const auto& c = secagg_role_->client().stats();
    const uint32_t sealed = secagg_role_->stats().sealed_sent;
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
    if (hct_role_->finished()) fleet_.stats->hct_codebook_rows.fetch_add(h.codebook_rows_kept);
    counted_finished_ = true;
    fleet_.stats->finished.fetch_add(1);
  }
}

}  // namespace nodefl::emulator
