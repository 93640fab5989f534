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
#include "nodefl/emulator/fault_plan.h"
#include "nodefl/emulator/shared_pair_keys.h"
#include "nodefl/host/net/wake_latch.h"
#include "nodefl/host/node/device_roles.h"
#if NODEFL_WITH_KCAGC
#include "nodefl/kcagc/participant_role.h"
#endif
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

// One node of the fleet: what it knows of the graph (host::node::NodeData)
// and its credentials.
struct DeviceSetup : host::node::NodeData {
  std::vector<uint8_t> certificate_der;
  std::vector<uint8_t> private_key_der;
  // What FleetSetup::faults does to this device (AssignFaults).
  DeviceFaults faults;
};

// The fleet: which job its devices take part in and how their roles are
// sized (host::node::RoleProfile, the same for every device), and how the
// emulator connects them.
struct FleetSetup : host::node::RoleProfile {
  tcp::endpoint server;
  std::string server_name;
  const tls::TlsCredentials* ca = nullptr;  // holds the pinned CA chain
  FleetStats* stats = nullptr;
  ConnectGate* gate = nullptr;
  uint32_t max_connect_attempts = 20;
  // Timers only: heartbeats, deadlines. Progress is driven by traffic (a
  // poll after every read and every completed write).
  std::chrono::milliseconds poll_interval{1000};
  // Certificate checks and pair keys shared between the emulated devices
  // (shared_pair_keys.h); nullptr: every device computes its own.
  SharedPairKeys* shared_pair_keys = nullptr;
#if NODEFL_WITH_KCAGC
  // kCAGC (job "kcagc"): participant l's graph and columns for device l
  // (kcagc_fleet.h); must outlive the devices.
  const std::vector<kcagc::ParticipantData>* kcagc_participants = nullptr;
#endif
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
  const echo::NeighbourEchoRole::Stats* stats() const { return node_ ? &node_->echo_role().stats() : nullptr; }
  const fedwalk::FedWalkHctRole* hct_role() const { return node_ ? &node_->hct_role() : nullptr; }
  const PrivacyLedger* ledger() const { return node_ ? &node_->ledger() : nullptr; }
  const fedwalk::FedWalkWalkRole* walk_role() const { return node_ ? node_->walk_role() : nullptr; }
  const fedwalk::FedWalkHistogramRole* histogram_role() const { return node_ ? node_->histogram_role() : nullptr; }
  const compare::SecureCompareRole* compare_role() const { return node_ ? node_->compare_role() : nullptr; }
  const lumos::LumosTrimRole* trim_role() const { return node_ ? node_->trim_role() : nullptr; }
  const lumos::LumosMcmcRole* mcmc_role() const { return node_ ? node_->mcmc_role() : nullptr; }
  const lumos::LumosTrainRole* train_role() const { return node_ ? node_->train_role() : nullptr; }
  const secagg::SecureAggregateRole* secagg_role() const { return node_ ? node_->secagg_role() : nullptr; }
#if NODEFL_WITH_KCAGC
  const kcagc::ParticipantRole* kcagc_role() const { return kcagc_role_.get(); }
#endif
  // Job "lumos-trees": the orientation the trimming stage left (the MCMC
  // role's when that stage ran, else the exact method's): (neighbour, kept
  // here) in neighbour order.
  std::vector<std::pair<uint32_t, bool>> LumosOrientation() const {
    return node_ ? node_->LumosOrientation() : std::vector<std::pair<uint32_t, bool>>();
  }
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

  // The device itself (the SDK's session and roles, sans-IO), shared with
  // the board client (examples/device-linux).
  std::unique_ptr<host::node::DeviceRoles> node_;
  device::DeviceSession* session_ = nullptr;  // node_->session()
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
#if NODEFL_WITH_KCAGC
  std::unique_ptr<kcagc::ParticipantRole> kcagc_role_;  // job "kcagc"
  kcagc::ParticipantRole::Stats kcagc_reported_;        // what the fleet's counters hold of it
#endif
  // What the fleet's counters hold of each role's (NoteProgress).
  uint32_t hct_reported_rounds_ = 0;
  uint32_t hct_reported_failures_ = 0;
  fedwalk::FedWalkWalkRole::Stats walk_reported_{};
  device::DeviceSession::Counters session_reported_{};
  fedwalk::FedWalkHistogramRole::Stats histogram_reported_{};
  compare::SecureCompareRole::Stats compare_reported_{};
  bool trim_bound_counted_ = false;
  lumos::LumosTrimRole::Stats trim_reported_{};
  lumos::LumosMcmcRole::Stats mcmc_reported_{};
  uint32_t train_epochs_reported_ = 0;
  secagg::AggregationClient::Stats secagg_reported_{};
  uint32_t secagg_sealed_reported_ = 0;

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
