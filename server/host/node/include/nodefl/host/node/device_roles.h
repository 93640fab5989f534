// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceRoles: one graph node's device as a Linux process builds it: its
// DRBGs, TLS configuration, device::DeviceSession and the SDK roles it
// serves for a job, each carved from one arena the SDK sizes
// (docs/porting.md, "Sizing a device"), plus the hand-overs between a
// job's stages (the walk role takes the HCT role's results, trimming the
// comparisons', training the trimming's). No I/O and no Boost: the
// emulator (nodefl-emulate, ten thousand of these over Asio) and the
// standalone board client (examples/device-linux, one over a POSIX socket)
// both drive one through the SDK's client::DevicePump.
//
// Use: construct, load the CA chain and the device's identity into
// credentials(), Init(), then Advance() after every step of the pump.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/compare_sizing.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/echo/echo_sizing.h"
#include "nodefl/echo/neighbour_echo.h"
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/histogram_role.h"
#include "nodefl/fedwalk/walk_role.h"
#include "nodefl/fedwalk/walk_sizing.h"
#include "nodefl/lumos/mcmc_role.h"
#include "nodefl/lumos/mcmc_sizing.h"
#include "nodefl/lumos/train_role.h"
#include "nodefl/lumos/trim_role.h"
#include "nodefl/lumos/trim_sizing.h"
#include "nodefl/platform/platform.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/secagg/aggregate_role.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::host::node {

// Which job a device takes part in and how much room its roles get. The
// same for every device of a fleet (the emulator's FleetSetup extends it).
struct RoleProfile {
  // "neighbour-echo", "fedwalk-hct", "fedwalk" (in paper mode HCT then
  // walks, in strict mode the cluster-histogram job), "fedwalk-histograms",
  // "secure-compare", "lumos-trees" (secure-compare, then trimming, then
  // training with lumos_train) or "secure-aggregate"; decides which roles
  // a device serves and when it is finished.
  std::string job = "neighbour-echo";
  std::string fedwalk_mode = "strict";  // the server's fedwalk_mode, for job "fedwalk"
  // lumos-trees with training (the server's lumos_train=node or link): the
  // devices also serve the training role, sized for these widths (the
  // server's lumos_* options must not exceed them) and the dataset's
  // features and classes.
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
  // The most vertices a FedWalk job may have for the device to take part:
  // sizes the kept tree and bin plan, the walk role's 2-hop predictor and
  // strict FedWalk's cluster cells.
  uint32_t vertex_count = 0;
  // FedWalk walks: walks a device holds at once (this plus a quarter of
  // its degree, at most kMaxPendingWalks), the longest walk it can hold,
  // and peer keys it caches for non-neighbours (2-hop jumps).
  uint32_t walk_slots = 32;
  uint32_t walk_length_capacity = 80;
  uint32_t walk_peer_cache = 256;
  // Secure comparisons: sessions a device runs at once and comparisons per
  // session it has room for.
  uint32_t compare_contexts = 4;
  uint32_t compare_slots = 16;
  // Secure aggregation: the most mask peers and the longest vector a device
  // has room for (the server's secagg_peers and secagg_length must fit).
  uint32_t secagg_peers = 64;
  uint32_t secagg_length = 10000;
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
  // Lowest level of the device session's log lines written to stderr
  // (device/device_session.h says what they log).
  LogLevel device_log_level = LogLevel::kWarning;
};

// What one node knows of the graph: itself, its neighbours, its data.
struct NodeData {
  uint32_t id = 0;
  std::vector<uint32_t> neighbours;  // sorted, no duplicates, not the node itself; at most the cap
  uint32_t degree = 0;               // the real degree (above neighbours.size() when capped)
  // Lumos training: the node's features and label (-1: none).
  std::vector<float> features;
  int32_t label = -1;
  // What earlier lives of the device released (privacy/ledger.h): a device
  // that restarts must not start its lifetime budget afresh, so an app
  // keeps PrivacyLedger::lifetime_epsilon()/lifetime_delta() and passes
  // them back here.
  double lifetime_epsilon_spent = 0.0;
  double lifetime_delta_spent = 0.0;
};

// Keeps at most `cap` of `neighbours` (0: all), chosen in the public order
// every device applies (privacy/neighbour_cap.h), as an app with room for
// `cap` neighbours would; the real degree stays the caller's to record.
void CapNeighbours(std::vector<uint32_t>* neighbours, uint32_t cap);

class DeviceRoles {
 public:
  // `profile` must outlive this.
  DeviceRoles(const RoleProfile& profile, NodeData node);
  ~DeviceRoles();
  DeviceRoles(const DeviceRoles&) = delete;
  DeviceRoles& operator=(const DeviceRoles&) = delete;

  // Load the CA chain and the device's own certificate and key here before Init.
  tls::TlsCredentials& credentials() { return credentials_; }
  // Where the session's log lines go (before Init; RoleProfile's
  // device_log_level still filters them). Default: stderr.
  void set_log_writer(void (*write)(void* context, LogLevel level, const char* line), void* context) {
    log_write_ = write;
    log_context_ = context;
  }

  // Seeds the DRBGs (the TLS one from host entropy; the noise one from
  // entropy or RoleProfile::noise_seed), builds the TLS configuration and
  // the session, and carves and registers the job's roles. `pair_keys`:
  // how the roles derive pair keys (the default: each checks the peer's
  // certificate and runs ECDH itself).
  Status Init(const seal::PairKeySource& pair_keys = seal::PairKeySource());

  // Hands each stage's results to the next once that stage has finished on
  // the device (call after every step of the pump: before the next stage's
  // first message can arrive). A failure is the device's: it cannot take
  // part in the rest of the job.
  Status Advance();

  // The job RoleProfile::job names has finished on the device.
  bool finished() const;

  uint32_t id() const { return node_.id; }
  const NodeData& node() const { return node_; }
  const tls::TlsConfig& tls_config() const { return tls_config_; }
  device::DeviceSession& session() { return *session_; }
  const device::DeviceSession& session() const { return *session_; }
  // Bytes of the arena the roles were carved from.
  size_t arena_bytes() const { return arena_buffer_.size(); }

  const echo::NeighbourEchoRole& echo_role() const { return *echo_role_; }
  const fedwalk::FedWalkHctRole& hct_role() const { return *hct_role_; }
  const PrivacyLedger& ledger() const { return *ledger_; }
  // Served only for some jobs: nullptr otherwise.
  const fedwalk::FedWalkWalkRole* walk_role() const { return walk_role_.get(); }
  const fedwalk::FedWalkHistogramRole* histogram_role() const { return histogram_role_.get(); }
  const compare::SecureCompareRole* compare_role() const { return compare_role_.get(); }
  const lumos::LumosTrimRole* trim_role() const { return trim_role_.get(); }
  const lumos::LumosMcmcRole* mcmc_role() const { return mcmc_role_.get(); }
  const lumos::LumosTrainRole* train_role() const { return train_role_.get(); }
  const secagg::SecureAggregateRole* secagg_role() const { return secagg_role_.get(); }
  // Whether the trimming roles were handed the comparison results (Advance).
  bool trim_bound() const { return trim_bound_; }
  // Job "lumos-trees": the orientation the trimming stage left (the MCMC
  // role's when that stage ran, else the exact method's): (neighbour, kept
  // here) in neighbour order.
  std::vector<std::pair<uint32_t, bool>> LumosOrientation() const;
  // The DRBG for key material (TLS, ECDH blinding, secure-sum shares), for
  // a role the caller adds to the session itself.
  Drbg& key_drbg() { return drbg_; }

 private:
  Status InitTrain(uint32_t neighbours, const seal::PairKeySource& pair_keys);
  Status InitSecureAggregate(const seal::PairKeySource& pair_keys);

  const RoleProfile& profile_;
  NodeData node_;
  void (*log_write_)(void* context, LogLevel level, const char* line) = nullptr;  // nullptr: stderr
  void* log_context_ = nullptr;
  Drbg drbg_;        // TLS and key material
  Drbg noise_drbg_;  // noise, kept apart from TLS randomness (crypto/rng.h)
  tls::TlsCredentials credentials_;
  tls::TlsConfig tls_config_;
  std::vector<uint8_t> frame_buffer_;
  std::vector<uint8_t> output_buffer_;
  std::vector<uint8_t> unacked_buffer_;
  // Every role's storage, carved in Init; declared before the storage
  // owners and roles so that it outlives them.
  std::vector<uint8_t> arena_buffer_;
  std::unique_ptr<device::DeviceSession> session_;
  echo::EchoArenaStorage echo_storage_;
  std::unique_ptr<echo::NeighbourEchoRole> echo_role_;
  std::vector<LedgerEntry> ledger_entries_;
  std::unique_ptr<PrivacyLedger> ledger_;
  std::unique_ptr<fedwalk::FedWalkHctRole> hct_role_;
  // Walk role and its storage (bound to the HCT results once those exist).
  fedwalk::WalkArenaStorage walk_storage_;
  std::unique_ptr<fedwalk::FedWalkWalkRole> walk_role_;
  uint64_t walk_bound_hct_job_ = 0;  // the HCT job whose results the walk role holds (0: none)
  std::unique_ptr<fedwalk::FedWalkHistogramRole> histogram_role_;
  compare::CompareArenaStorage compare_storage_;
  std::unique_ptr<compare::SecureCompareRole> compare_role_;
  // Lumos trimming, bound to the comparison results once that stage is done.
  lumos::TrimArenaStorage trim_storage_;
  std::unique_ptr<lumos::LumosTrimRole> trim_role_;
  bool trim_bound_ = false;
  lumos::McmcArenaStorage mcmc_storage_;
  std::unique_ptr<lumos::LumosMcmcRole> mcmc_role_;
  // Lumos training, bound to whichever trimming role finished.
  std::vector<lumos::TrainPeer> train_peers_;
  std::vector<roles::KeyedPeer> train_keys_;
  std::vector<lumos::TrainPeer> train_partners_;
  std::vector<roles::KeyedPeer> train_partner_keys_;
  std::vector<uint8_t> train_memory_;
  std::vector<secagg::AggregationPeer> train_agg_peers_;
  std::vector<secagg::Share> train_agg_shares_;
  std::vector<uint64_t> train_agg_points_;
  std::vector<roles::KeyedPeer> train_agg_keys_;
  std::vector<secagg::HeldMessage> train_agg_held_;
  std::unique_ptr<lumos::LumosTrainRole> train_role_;
  bool train_bound_ = false;
  // Secure aggregation.
  std::vector<secagg::AggregationPeer> secagg_peers_;
  std::vector<secagg::Share> secagg_shares_;
  std::vector<uint64_t> secagg_points_;
  std::vector<uint32_t> secagg_vector_;
  std::vector<roles::KeyedPeer> secagg_keys_;
  std::vector<secagg::HeldMessage> secagg_held_;
  std::unique_ptr<secagg::SecureAggregateRole> secagg_role_;
};

}  // namespace nodefl::host::node
