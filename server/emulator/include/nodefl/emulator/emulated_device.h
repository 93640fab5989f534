// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// EmulatedDevice: one graph node running the real device SDK: its own
// credentials and DRBG, its own TLS connection (a tls::TlsEndpoint and a
// device::DeviceSession joined by the SDK's client::DevicePump) and the
// roles it serves. Only its own
// neighbour list is given to it. Three coroutines on its strand: reader,
// writer and a poll timer; reconnects with its resume token if the
// connection breaks.
#pragma once

#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/client/device_pump.h"
#include "nodefl/device/device_session.h"
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/histogram_role.h"
#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/compare_sizing.h"
#include "nodefl/echo/echo_sizing.h"
#include "nodefl/lumos/mcmc_role.h"
#include "nodefl/lumos/mcmc_sizing.h"
#include "nodefl/lumos/train_role.h"
#include "nodefl/lumos/trim_role.h"
#include "nodefl/lumos/trim_sizing.h"
#include "nodefl/fedwalk/walk_sizing.h"
#include "nodefl/fedwalk/walk_role.h"
#include "nodefl/emulator/fault_plan.h"
#include "nodefl/emulator/shared_pair_keys.h"
#include "nodefl/host/net/wake_latch.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"
#include "nodefl/echo/neighbour_echo.h"
#if NODEFL_WITH_KCAGC
#include "nodefl/kcagc/participant_role.h"
#endif
#include "nodefl/secagg/aggregate_role.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "nodefl/tls/endpoint.h"

namespace nodefl::emulator {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Counters shared by all devices (atomics: devices run on several threads).
struct FleetStats {
  std::atomic<uint64_t> connecting{0};
  std::atomic<uint64_t> connected{0};       // handshake done, at some point
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> connect_failures{0};
  // The devices' sessions (DeviceSession::Counters, summed): what they kept
  // for a resume and what a resume brought back.
  std::atomic<uint64_t> sends_kept{0};
  std::atomic<uint64_t> sends_resent{0};
  std::atomic<uint64_t> sends_unkept{0};
  std::atomic<uint64_t> sends_forgotten{0};
  std::atomic<uint64_t> records_repeated{0};
  std::atomic<uint64_t> relay_duplicates{0};
  std::atomic<uint64_t> failed{0};          // gave up
  std::atomic<uint64_t> finished{0};        // role reported round 2
  std::atomic<uint64_t> sealed_sent{0};
  std::atomic<uint64_t> verified_received{0};
  std::atomic<uint64_t> duplicates{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> handshake_us_total{0};
  // FedWalk HCT.
  std::atomic<uint64_t> hct_rounds_reported{0};
  std::atomic<uint64_t> hct_codebook_rows{0};
  std::atomic<uint64_t> hct_failures{0};
  // FedWalk walks.
  std::atomic<uint64_t> walks_forwarded{0};
  std::atomic<uint64_t> walks_finished{0};
  std::atomic<uint64_t> walks_dropped{0};
  // Strict FedWalk's cluster histograms.
  std::atomic<uint64_t> histogram_releases{0};
  std::atomic<uint64_t> histogram_failures{0};
  // Secure comparisons.
  std::atomic<uint64_t> compare_done{0};
  std::atomic<uint64_t> compare_aborted{0};
  std::atomic<uint64_t> compare_messages{0};
  std::atomic<uint64_t> compare_bytes{0};
  // Lumos trimming.
  std::atomic<uint64_t> trim_bound{0};
  std::atomic<uint64_t> trim_messages{0};
  std::atomic<uint64_t> trim_steps{0};  // summed over devices
  std::atomic<uint64_t> train_epochs{0};  // Lumos training: epochs uploaded, summed over devices
  // Secure aggregation (job "secure-aggregate").
  std::atomic<uint64_t> secagg_completed{0};  // a device's part of one aggregation done
  std::atomic<uint64_t> secagg_sealed{0};     // peer messages sealed
  std::atomic<uint64_t> secagg_bytes_to_server{0};
  std::atomic<uint64_t> secagg_refused{0};    // records and messages devices refused
  std::atomic<uint64_t> kcagc_instructions{0};   // kcagc: instructions participants followed
  std::atomic<uint64_t> kcagc_contributions{0};  // kcagc: vectors offered to a secure sum
  // Injected faults (FleetSetup::faults): what actually happened.
  std::atomic<uint64_t> faults_killed{0};        // devices killed
  std::atomic<uint64_t> faults_revived{0};       // ... and brought back
  std::atomic<uint64_t> faults_kill_missed{0};   // chosen, but finished before their kill time
  std::atomic<uint64_t> faults_slow_waits{0};    // reads a slow device waited after
  std::atomic<uint64_t> faults_dropped{0};       // writes or reads lost on the wire
  std::atomic<uint64_t> faults_corrupted{0};     // ... with a byte flipped
  std::atomic<uint64_t> faults_cut{0};           // connections cut
};

// Limits how many devices connect and handshake at the same time, so that
// 10,000 devices do not all hit the server's accept queue at once.
class ConnectGate {
 public:
  explicit ConnectGate(size_t slots) : free_(slots) {}
  bool TryEnter() {
    size_t f = free_.load();
    while (f > 0) {
      if (free_.compare_exchange_weak(f, f - 1)) return true;
    }
    return false;
  }
  void Leave() { free_.fetch_add(1); }

 private:
  std::atomic<size_t> free_;
};

struct DeviceSetup {
  uint32_t id = 0;
  std::vector<uint32_t> neighbours;  // sorted; at most the cap (NeighbourCap's choice)
  uint32_t degree = 0;               // the real degree (above neighbours.size() when capped)
  std::vector<uint8_t> certificate_der;
  std::vector<uint8_t> private_key_der;
  // Lumos training: the node's features (binary, from features.tsv) and
  // label (-1: none).
  std::vector<float> features;
  int32_t label = -1;
  // What FleetSetup::faults does to this device (AssignFaults).
  DeviceFaults faults;
};

struct FleetSetup {
  tcp::endpoint server;
  std::string server_name;
  const tls::TlsCredentials* ca = nullptr;  // holds the pinned CA chain
  FleetStats* stats = nullptr;
  ConnectGate* gate = nullptr;
  uint32_t max_connect_attempts = 20;
  // Timers only: heartbeats, deadlines. Progress is driven by traffic (a
  // poll after every read and every completed write).
  std::chrono::milliseconds poll_interval{1000};
  // Which job the fleet takes part in: "neighbour-echo", "fedwalk-hct",
  // "fedwalk" (in paper mode HCT then walks, in strict mode the
  // cluster-histogram job), "fedwalk-histograms", "secure-compare" or
  // "lumos-trees" (secure-compare, then trimming);
  // decides which roles a device serves and when it is finished.
  std::string job = "neighbour-echo";
  std::string fedwalk_mode = "strict";  // the server's fedwalk_mode, for job "fedwalk"
  // lumos-trees with training (the server's lumos_train=node or link): the devices
  // also serve the training role, sized for these widths (the server's
  // lumos_* options must not exceed them) and the dataset's features and
  // classes.
  bool lumos_train = false;
  uint32_t train_hidden = 16;
  uint32_t train_out = 16;
  uint32_t train_features = 0;
  uint32_t train_classes = 0;
  // Link task: partners each device has room for (the server's
  // lumos_negatives + lumos_eval_negatives must not exceed it).
  uint32_t train_partners = 8;
  // Training with the server's lumos_secure_sum: mask peers each device has
  // room for (0: none, and the devices refuse a secure-sum job; the
  // server's graph gives a device lumos_secure_peers, 2 ceil(log2 n) by
  // default, and a few more).
  uint32_t train_secagg_peers = 0;
  // FedWalk HCT storage per device: codebook entries per neighbour plus a
  // spare of kCodebookSpareEntries (rows hold one to a few entries at the
  // paper's epsilon; deg x K always suffices), and whether to keep
  // the published tree and the whole bin plan (memory: ~13 bytes per vertex
  // per device).
  uint32_t codebook_entries_per_neighbour = 8;
  static constexpr uint32_t kCodebookSpareEntries = 1024;
  bool keep_tree_and_bin_plan = false;
  uint32_t vertex_count = 0;  // for sizing the kept tree and bin plan
  // FedWalk walks: walks a device holds at once (this plus a quarter of
  // its degree, at most kMaxPendingWalks), the longest walk it can hold,
  // and peer keys it caches for non-neighbours (2-hop jumps).
  uint32_t walk_slots = 32;
  uint32_t walk_length_capacity = 80;
  uint32_t walk_peer_cache = 256;
  // Certificate checks and pair keys shared between the emulated devices
  // (shared_pair_keys.h); nullptr: every device computes its own.
  SharedPairKeys* shared_pair_keys = nullptr;
  // Secure comparisons: sessions a device runs at once and comparisons per
  // session it has room for.
  uint32_t compare_contexts = 4;
  uint32_t compare_slots = 16;
  // Secure aggregation: the most mask peers and the longest vector a device
  // has room for (the server's secagg_peers and secagg_length must fit).
  uint32_t secagg_peers = 64;
  uint32_t secagg_length = 10000;
#if NODEFL_WITH_KCAGC
  // kCAGC (job "kcagc"): participant l's graph and columns for device l
  // (kcagc_fleet.h); must outlive the devices.
  const std::vector<kcagc::ParticipantData>* kcagc_participants = nullptr;
#endif
  // Every device's privacy budget (privacy/ledger.h): what it refuses to
  // release, whatever the server asks.
  PrivacyBudget budget;
  // Non-zero: each device's noise generator (encodings, randomised
  // response, dropout) is seeded from this and its id instead of entropy,
  // so that runs can be repeated draw for draw. For experiments only: the
  // seed replays every noise draw (docs/privacy.md, "Randomness").
  uint64_t noise_seed = 0;
  // The public neighbour cap every device applies (0: none).
  uint32_t max_neighbours = 0;
  // Lowest level of the device sessions' log lines written to stderr
  // (device/device_session.h says what they log).
  LogLevel device_log_level = LogLevel::kWarning;
  // Failures to inject (fault_plan.h; each device's share is in its
  // DeviceSetup::faults); nullptr: none. Must outlive the devices.
  const FaultPlan* faults = nullptr;
};

class EmulatedDevice : public std::enable_shared_from_this<EmulatedDevice> {
 public:
  EmulatedDevice(asio::io_context& io, const FleetSetup& fleet, DeviceSetup setup);
  ~EmulatedDevice();

  // Loads credentials and builds the TLS configuration and the session.
  Status Init();
  void Start();
  void Stop();
  // The device hangs for good (a frozen app): its connection stays open but
  // it reads, writes and polls nothing more, so the server sees silence, not
  // a disconnect. Stop() still ends it.
  void Freeze();
  // The fault plan's kill (FleetSetup::faults): the connection is cut with
  // no Goodbye and the device is silent until the plan revives it, or for
  // good (then it counts as failed).
  void Kill();
  bool killed_for_good() const { return killed_for_good_; }
  bool was_killed() const { return was_killed_; }  // at some point, revived or not

  // The job this device was told to expect has finished on the device
  // (FleetSetup::job: the echo job's round 2, the FedWalk HCT job's round
  // 3, or the walk job's round 3).
  bool finished() const;
  bool failed() const { return failed_; }
  uint32_t id() const { return setup_.id; }
  const echo::NeighbourEchoRole::Stats* stats() const { return role_ ? &role_->stats() : nullptr; }
  const fedwalk::FedWalkHctRole* hct_role() const { return hct_role_.get(); }
  const PrivacyLedger* ledger() const { return ledger_.get(); }
  const fedwalk::FedWalkWalkRole* walk_role() const { return walk_role_.get(); }
  const fedwalk::FedWalkHistogramRole* histogram_role() const { return histogram_role_.get(); }
  const compare::SecureCompareRole* compare_role() const { return compare_role_.get(); }
  const lumos::LumosTrimRole* trim_role() const { return trim_role_.get(); }
  const lumos::LumosMcmcRole* mcmc_role() const { return mcmc_role_.get(); }
  const lumos::LumosTrainRole* train_role() const { return train_role_.get(); }
  const secagg::SecureAggregateRole* secagg_role() const { return secagg_role_.get(); }
#if NODEFL_WITH_KCAGC
  const kcagc::ParticipantRole* kcagc_role() const { return kcagc_role_.get(); }
#endif
  // Job "lumos-trees": the orientation the trimming stage left (the MCMC
  // role's when that stage ran, else the exact method's): (neighbour, kept
  // here) in neighbour order.
  std::vector<std::pair<uint32_t, bool>> LumosOrientation() const;
  const char* last_error() const { return last_error_.c_str(); }

 private:
  using Clock = std::chrono::steady_clock;
  asio::awaitable<void> Run();
  asio::awaitable<bool> Connect();
  asio::awaitable<void> Reader();
  // Returns once the device is no longer frozen, stopping, or its socket closed.
  asio::awaitable<void> WaitWhileFrozen();
  asio::awaitable<void> Writer();
  asio::awaitable<void> Poller();
  // The pump's ciphertext side over the socket: the handshake, and writing
  // whatever the pump has pending.
  asio::awaitable<Status> Handshake();
  asio::awaitable<Status> WritePending(std::vector<uint8_t>& batch);
  Status EnsurePump();
  void CloseSocket();
  std::string PumpError(const char* what, Status status) const;
  void Wake();
  uint64_t NowMicros() const;
  void Fail(const std::string& why);
  // Moves the role's counts into the fleet counters (after every step).
  void NoteProgress();
  // Fault injection: whether the device has reached the plan's kill phase,
  // and the timer that kills it DELAY later.
  bool ReachedPhase(FaultPhase phase) const;
  void MaybeScheduleKill();
  // The plan's wire draw for one batch of bytes; may flip a byte of it.
  WireFault WireDraw(std::vector<uint8_t>& bytes, size_t size);

  const FleetSetup& fleet_;
  DeviceSetup setup_;
  asio::strand<asio::io_context::executor_type> strand_;
  // The writer sleeps on wake_ until the pump has output (Wake()); the
  // reader, holding bytes the pump could not take yet, sleeps on drained_
  // until the writer has freed output room.
  host::net::WakeLatch wake_;
  host::net::WakeLatch drained_;
  asio::steady_timer poll_timer_;

  Drbg drbg_;
  tls::TlsCredentials credentials_;
  tls::TlsConfig tls_config_;
  // The connection: the socket (Asio) and, made at the first connect and
  // reset for every later one, the SDK's TLS endpoint and the pump joining
  // it to session_ (sans-IO).
  std::unique_ptr<tcp::socket> socket_;
  std::vector<uint8_t> tls_inbound_;
  std::vector<uint8_t> tls_outbound_;
  std::vector<uint8_t> plaintext_;
  std::unique_ptr<tls::TlsEndpoint> endpoint_;
  std::unique_ptr<client::DevicePump> pump_;
  bool session_start_failed_ = false;
  std::vector<uint8_t> frame_buffer_;
  std::vector<uint8_t> output_buffer_;
  std::vector<uint8_t> unacked_buffer_;
  // Every role's storage, carved in Init (the SDK's Plan/Carve); declared
  // before the storage owners and roles so that it outlives them.
  std::vector<uint8_t> arena_buffer_;
  std::unique_ptr<device::DeviceSession> session_;
  echo::EchoArenaStorage echo_storage_;
  std::unique_ptr<echo::NeighbourEchoRole> role_;
  // FedWalk HCT: its own DRBG for noise (kept apart from TLS randomness),
  // ledger; its storage lives in arena_buffer_.
  Drbg noise_drbg_;
  std::vector<LedgerEntry> ledger_entries_;
  std::unique_ptr<PrivacyLedger> ledger_;
  std::unique_ptr<fedwalk::FedWalkHctRole> hct_role_;
  uint32_t hct_reported_rounds_ = 0;
  // Walk role and its storage (bound to the HCT results once those exist).
  fedwalk::WalkArenaStorage walk_storage_;
  std::unique_ptr<fedwalk::FedWalkWalkRole> walk_role_;
  uint64_t walk_bound_hct_job_ = 0;  // the HCT job whose results the walk role holds (0: none)
  fedwalk::FedWalkWalkRole::Stats walk_reported_{};
  device::DeviceSession::Counters session_reported_{};
  uint32_t hct_reported_failures_ = 0;
  // Strict FedWalk: one cell per cluster (the job's vertex count, at most
  // 65535) and the neighbours' clusters, in arena_buffer_.
  std::unique_ptr<fedwalk::FedWalkHistogramRole> histogram_role_;
  fedwalk::FedWalkHistogramRole::Stats histogram_reported_{};
  // Secure comparisons.
  compare::CompareArenaStorage compare_storage_;
  std::unique_ptr<compare::SecureCompareRole> compare_role_;
  compare::SecureCompareRole::Stats compare_reported_{};
  // Lumos trimming (job "lumos-trees"), bound to the comparison results
  // once the secure-compare stage is done.
  lumos::TrimArenaStorage trim_storage_;
  std::unique_ptr<lumos::LumosTrimRole> trim_role_;
  bool trim_bound_ = false;
  lumos::LumosTrimRole::Stats trim_reported_{};
  // The paper's MCMC (the same plan with lumos_method=mcmc): served next to
  // the exact method's role; the server's plan decides which job runs.
  lumos::McmcArenaStorage mcmc_storage_;
  std::unique_ptr<lumos::LumosMcmcRole> mcmc_role_;
  lumos::LumosMcmcRole::Stats mcmc_reported_{};
  // Lumos training (FleetSetup::lumos_train), bound to whichever trimming
  // role finished.
  std::vector<lumos::TrainPeer> train_peers_;
  std::vector<roles::KeyedPeer> train_keys_;
  std::vector<lumos::TrainPeer> train_partners_;
  std::vector<roles::KeyedPeer> train_partner_keys_;
  std::vector<uint8_t> train_memory_;
  // ... and its secure sum's (FleetSetup::train_secagg_peers).
  std::vector<secagg::AggregationPeer> train_agg_peers_;
  std::vector<secagg::Share> train_agg_shares_;
  std::vector<uint64_t> train_agg_points_;
  std::vector<roles::KeyedPeer> train_agg_keys_;
  std::vector<secagg::HeldMessage> train_agg_held_;
  std::unique_ptr<lumos::LumosTrainRole> train_role_;
  bool train_bound_ = false;
  uint32_t train_epochs_reported_ = 0;
  // Secure aggregation: the client's memory and the role.
  std::vector<secagg::AggregationPeer> secagg_peers_;
  std::vector<secagg::Share> secagg_shares_;
  std::vector<uint64_t> secagg_points_;
  std::vector<uint32_t> secagg_vector_;
  std::vector<roles::KeyedPeer> secagg_keys_;
  std::vector<secagg::HeldMessage> secagg_held_;
  std::unique_ptr<secagg::SecureAggregateRole> secagg_role_;
  secagg::AggregationClient::Stats secagg_reported_{};
  uint32_t secagg_sealed_reported_ = 0;
#if NODEFL_WITH_KCAGC
  std::unique_ptr<kcagc::ParticipantRole> kcagc_role_;  // job "kcagc"
  kcagc::ParticipantRole::Stats kcagc_reported_;        // what the fleet's counters hold of it
#endif

  bool connection_up_ = false;
  bool stopping_ = false;
  bool frozen_ = false;
  // Fault injection (FleetSetup::faults).
  bool kill_scheduled_ = false;
  bool dead_ = false;
  bool killed_for_good_ = false;
  bool was_killed_ = false;
  WireDice dice_{0};
  asio::steady_timer fault_timer_;
  bool failed_ = false;
  bool counted_finished_ = false;
  uint32_t connection_epoch_ = 0;
  std::string last_error_;
  Clock::time_point epoch_ = Clock::now();
  echo::NeighbourEchoRole::Stats reported_{};
};

}  // namespace nodefl::emulator
