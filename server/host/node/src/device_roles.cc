// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/node/device_roles.h"

#include <algorithm>

#include "nodefl/core/storage_plan.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/fedwalk/hct_sizing.h"
#include "nodefl/fedwalk/histogram_sizing.h"
#include "nodefl/lumos/mcmc_binding.h"
#include "nodefl/lumos/trim_binding.h"
#include "nodefl/platform/host_platform.h"
#include "nodefl/privacy/neighbour_cap.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::host::node {
namespace {

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
// Room for several frames, so a role can send a batch of sealed messages per
// poll without waiting for the socket.
constexpr size_t kOutputFrames = 4;
// Kept sends (RelaySends and JobData uploads) until the server acknowledges
// them: 6 largest entries (24.7 kB), plus one per 64 neighbours. It is also
// the device's send window, and roles send only while a largest send still
// fits: 20.6 KiB in flight, more than the output buffer holds. With two
// (4.1 KiB in flight) FedWalk devices forwarded so slowly that their walk
// queues filled and walks were dropped and issued again. A hub forwards
// walks in proportion to its degree, and its acknowledgements queue behind
// its deliveries: with 6 entries BlogCatalog's largest hubs (degree up to
// 3,992) dropped most arrivals at gamma 80 for want of window.
constexpr size_t kUnackedBaseEntries = 6;
constexpr size_t kNeighboursPerUnackedEntry = 64;
constexpr size_t kMaxUnackedEntries = 256;

size_t UnackedBytes(size_t neighbours) {
  const size_t entries = std::min(kMaxUnackedEntries, kUnackedBaseEntries + neighbours / kNeighboursPerUnackedEntry);
  return entries * device::UnackedSends::kMaxEntryBytes;
}

// One entropy source for every device's DRBG; it must outlive them all.
const EntropySource& HostEntropy() {
  static const EntropySource source{&HostEntropyFill, nullptr};
  return source;
}

}  // namespace

void CapNeighbours(std::vector<uint32_t>* neighbours, uint32_t cap) {
  if (cap == 0 || neighbours->size() <= cap) return;
  std::vector<uint32_t> kept(cap);
  NeighbourCap chooser{Span<uint32_t>(kept)};
  for (uint32_t u : *neighbours) chooser.Offer(u);
  const Span<uint32_t> chosen = chooser.Finish();
  neighbours->assign(chosen.begin(), chosen.end());
}

DeviceRoles::DeviceRoles(const RoleProfile& profile, NodeData node) : profile_(profile), node_(std::move(node)) {}

DeviceRoles::~DeviceRoles() = default;

Status DeviceRoles::Init(const seal::PairKeySource& pair_keys) {
  const uint32_t id = node_.id;
  const uint8_t personal[4] = {static_cast<uint8_t>(id), static_cast<uint8_t>(id >> 8),
                               static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 24)};
  NODEFL_TRY(drbg_.SeedFromEntropy(HostEntropy(), ConstByteSpan(personal)));
  NODEFL_TRY(tls_config_.Init(tls::TlsRole::kClient, credentials_, &crypto::DrbgRandom, &drbg_));

  frame_buffer_.resize(kMaxFrame);
  output_buffer_.resize(kOutputFrames * kMaxFrame);
  unacked_buffer_.resize(UnackedBytes(node_.neighbours.size()));
  device::SessionOptions options;
  options.device_id = id;
  // Session events go to stderr from the profile's level (warnings and
  // errors by default, so that ten thousand healthy devices stay quiet).
  options.log.write = log_write_ != nullptr ? log_write_ : &HostStderrLog;
  options.log.context = log_write_ != nullptr ? log_context_ : nullptr;
  options.log.min_level = profile_.device_log_level;
  session_ = std::make_unique<device::DeviceSession>(
      options,
      device::SessionBuffers{ByteSpan(frame_buffer_), ByteSpan(output_buffer_), ByteSpan(unacked_buffer_)});

  // One arena per device, sized by the SDK from the roles this device
  // serves (docs/porting.md, "Sizing a device"); each role is carved from it.
  const uint32_t neighbours = static_cast<uint32_t>(node_.neighbours.size());
  const uint32_t degree = std::max<uint32_t>(node_.degree, neighbours);
  const std::string& job = profile_.job;
  const bool strict_fedwalk = job == "fedwalk-histograms" || (job == "fedwalk" && profile_.fedwalk_mode == "strict");
  const bool paper_walks = job == "fedwalk" && !strict_fedwalk;
  const bool trims = job == "lumos-trees";
  const bool compares = job == "secure-compare" || trims;
  echo::EchoSizing echo_sizing;
  echo_sizing.neighbours = neighbours;
  fedwalk::HctSizing hct_sizing;
  hct_sizing.neighbours = neighbours;
  hct_sizing.codebook_entries_per_neighbour = profile_.codebook_entries_per_neighbour;
  hct_sizing.codebook_spare_entries = RoleProfile::kCodebookSpareEntries;
  hct_sizing.kept_vertex_count = profile_.keep_tree_and_bin_plan ? profile_.vertex_count : 0;
  fedwalk::HistogramSizing histogram_sizing;
  histogram_sizing.neighbours = neighbours;
  histogram_sizing.max_clusters = profile_.vertex_count;
  fedwalk::WalkSizing walk_sizing;
  walk_sizing.neighbours = neighbours;
  walk_sizing.peer_cache = profile_.walk_peer_cache;
  walk_sizing.base_slots = profile_.walk_slots;
  walk_sizing.walk_length = profile_.walk_length_capacity;
  walk_sizing.vertex_count = profile_.vertex_count;
  compare::CompareSizing compare_sizing;
  compare_sizing.neighbours = neighbours;
  compare_sizing.contexts = profile_.compare_contexts;
  compare_sizing.slots_per_context = profile_.compare_slots;
  lumos::TrimSizing trim_sizing;
  trim_sizing.neighbours = neighbours;
  lumos::McmcSizing mcmc_sizing;
  mcmc_sizing.neighbours = neighbours;
  mcmc_sizing.contexts = profile_.compare_contexts;

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
  if (trims) NODEFL_TRY(add(lumos::Plan(trim_sizing)));
  if (trims) NODEFL_TRY(add(lumos::Plan(mcmc_sizing)));
  arena_buffer_.resize(device_plan.ArenaBytes());
  Arena arena{ByteSpan(arena_buffer_)};

  NODEFL_TRY_ASSIGN(echo_storage_, echo::Carve(arena, echo_sizing));
  for (uint32_t i = 0; i < neighbours; ++i) echo_storage_.peers[i].id = node_.neighbours[i];
  echo_role_ = std::make_unique<echo::NeighbourEchoRole>(id, echo_storage_.peers.span(), credentials_,
                                                          &crypto::DrbgRandom, &drbg_);
  NODEFL_TRY(echo_role_->Init());
  NODEFL_TRY(session_->AddRole(*echo_role_));

  const uint8_t noise_personal[5] = {'n', personal[0], personal[1], personal[2], personal[3]};
  if (profile_.noise_seed != 0) {
    NODEFL_TRY(noise_drbg_.SeedDeterministic(profile_.noise_seed, id));
  } else {
    NODEFL_TRY(noise_drbg_.SeedFromEntropy(HostEntropy(), ConstByteSpan(noise_personal)));
  }
  ledger_entries_.resize(8);
  ledger_ = std::make_unique<PrivacyLedger>(Span<LedgerEntry>(ledger_entries_), profile_.budget,
                                           node_.lifetime_epsilon_spent, node_.lifetime_delta_spent);
  NODEFL_TRY_ASSIGN(fedwalk::HctStorage hct_storage, fedwalk::Carve(arena, hct_sizing));
  for (uint32_t i = 0; i < neighbours; ++i) hct_storage.neighbours[i].id = node_.neighbours[i];
  hct_role_ = std::make_unique<fedwalk::FedWalkHctRole>(id, hct_storage, noise_drbg_, *ledger_);
  NODEFL_TRY(hct_role_->Init(degree, profile_.max_neighbours == 0 ? fedwalk::FedWalkHctRole::kNoNeighbourCap
                                                                  : profile_.max_neighbours));
  NODEFL_TRY(session_->AddRole(*hct_role_));

  if (strict_fedwalk) {
    NODEFL_TRY_ASSIGN(fedwalk::HistogramStorage hs, fedwalk::Carve(arena, histogram_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) hs.neighbours[i].id = node_.neighbours[i];
    histogram_role_ = std::make_unique<fedwalk::FedWalkHistogramRole>(id, hs, noise_drbg_, *ledger_);
    NODEFL_TRY(histogram_role_->Init(degree, profile_.max_neighbours == 0
                                                 ? fedwalk::FedWalkHistogramRole::kNoNeighbourCap
                                                 : profile_.max_neighbours));
    NODEFL_TRY(session_->AddRole(*histogram_role_));
  }
  if (paper_walks) {
    NODEFL_TRY_ASSIGN(walk_storage_, fedwalk::Carve(arena, walk_sizing));
    // Walk decisions and encodings draw from the noise DRBG; ECDH blinding
    // from the TLS one (crypto/rng.h asks for separate generators).
    walk_role_ = std::make_unique<fedwalk::FedWalkWalkRole>(id, walk_storage_.storage, credentials_,
                                                          &crypto::DrbgRandom, &drbg_, noise_drbg_, *ledger_);
    walk_role_->SetPairKeySource(pair_keys);
    NODEFL_TRY(session_->AddRole(*walk_role_));
  }
  if (compares) {
    NODEFL_TRY_ASSIGN(compare_storage_, compare::Carve(arena, compare_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) compare_storage_.peers[i].id = node_.neighbours[i];
    compare_role_ = std::make_unique<compare::SecureCompareRole>(id, compare_storage_.peers.span(),
                                                                 compare_storage_.contexts.span(), credentials_,
                                                                 &crypto::DrbgRandom, &drbg_);
    compare_role_->SetPairKeySource(pair_keys);
    compare_role_->set_hand_over_keys(trims);
    NODEFL_TRY(compare_role_->Init());
    NODEFL_TRY(session_->AddRole(*compare_role_));
  }
  if (trims) {
    NODEFL_TRY_ASSIGN(trim_storage_, lumos::Carve(arena, trim_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) trim_storage_.peers[i].id = node_.neighbours[i];
    trim_role_ = std::make_unique<lumos::LumosTrimRole>(id, trim_storage_.peers.span());
    NODEFL_TRY(trim_role_->Init());
    NODEFL_TRY(session_->AddRole(*trim_role_));
    NODEFL_TRY_ASSIGN(mcmc_storage_, lumos::Carve(arena, mcmc_sizing));
    for (uint32_t i = 0; i < neighbours; ++i) {
      mcmc_storage_.peers[i].id = mcmc_storage_.neighbour_keys[i].id = node_.neighbours[i];
    }
    mcmc_role_ = std::make_unique<lumos::LumosMcmcRole>(
        id, mcmc_storage_.peers.span(), mcmc_storage_.neighbour_keys.span(), mcmc_storage_.cache.span(),
        mcmc_storage_.contexts.span(), credentials_, &crypto::DrbgRandom, &drbg_);
    mcmc_role_->SetPairKeySource(pair_keys);
    NODEFL_TRY(mcmc_role_->Init());
    NODEFL_TRY(session_->AddRole(*mcmc_role_));
    if (profile_.lumos_train) NODEFL_TRY(InitTrain(neighbours, pair_keys));
  }
  if (job == "secure-aggregate") NODEFL_TRY(InitSecureAggregate(pair_keys));
  return Status::Ok();
}

Status DeviceRoles::InitTrain(uint32_t neighbours, const seal::PairKeySource& pair_keys) {
  train_peers_.resize(neighbours);
  train_keys_.resize(neighbours);
  for (uint32_t i = 0; i < neighbours; ++i) train_peers_[i].id = train_keys_[i].id = node_.neighbours[i];
  // Room for the widest model the profile expects (GAT needs more than
  // GCN) on a tree of every neighbour.
  lumos::TrainParameters widest;
  widest.layer = 2;
  widest.features = profile_.train_features;
  widest.hidden = static_cast<uint16_t>(profile_.train_hidden);
  widest.out = static_cast<uint16_t>(profile_.train_out);
  // GAT keeps attention per head and edge: the most heads any shape of
  // these widths can have (heads divide both widths).
  widest.heads = static_cast<uint8_t>(std::min<uint32_t>(255, std::min(profile_.train_hidden, profile_.train_out)));
  widest.classes = static_cast<uint16_t>(profile_.train_classes);
  // ... for either task (link: no classifier, but partners and their
  // embeddings).
  lumos::TrainParameters widest_link = widest;
  widest_link.task = lumos::TrainTask::kLink;
  widest_link.classes = 0;
  // ... and with secure sum's input vector when the device has room for
  // mask peers.
  const uint32_t mask_peers = profile_.train_secagg_peers;
  widest.secure_sum = widest_link.secure_sum = mask_peers > 0;
  const uint32_t partners = profile_.train_partners;
  train_memory_.resize(std::max(lumos::TrainRoleMemory(widest, neighbours, neighbours),
                                lumos::TrainRoleMemory(widest_link, neighbours, neighbours, partners)));
  train_partners_.resize(partners);
  train_partner_keys_.resize(partners);
  train_role_ = std::make_unique<lumos::LumosTrainRole>(
      node_.id, Span<lumos::TrainPeer>(train_peers_), Span<roles::KeyedPeer>(train_keys_), ByteSpan(train_memory_),
      credentials_, &crypto::DrbgRandom, &drbg_, noise_drbg_, *ledger_);
  train_role_->SetPairKeySource(pair_keys);
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
  train_role_->SetData(Span<const float>(node_.features), node_.label);
  return session_->AddRole(*train_role_);
}

Status DeviceRoles::InitSecureAggregate(const seal::PairKeySource& pair_keys) {
  // Memory for the widest aggregation the server may run (RoleProfile).
  const uint32_t peers = profile_.secagg_peers;
  secagg_peers_.resize(peers);
  secagg_shares_.resize(2 * size_t{peers});
  secagg_points_.resize(peers);
  secagg_vector_.resize(profile_.secagg_length);
  secagg_keys_.resize(peers);
  secagg_held_.resize(peers);  // one per mask peer: none is ever dropped
  secagg::SecureAggregateMemory memory;
  memory.aggregation =
      secagg::AggregationMemory{Span<secagg::AggregationPeer>(secagg_peers_), Span<secagg::Share>(secagg_shares_),
                                Span<uint64_t>(secagg_points_), Span<uint32_t>(secagg_vector_)};
  memory.keys = Span<roles::KeyedPeer>(secagg_keys_);
  memory.held = Span<secagg::HeldMessage>(secagg_held_);
  secagg_role_ = std::make_unique<secagg::SecureAggregateRole>(node_.id, memory, credentials_, drbg_);
  secagg_role_->SetPairKeySource(pair_keys);
  return session_->AddRole(*secagg_role_);
}

Status DeviceRoles::Advance() {
  if (walk_role_ && hct_role_->finished() && hct_role_->job_id() != walk_bound_hct_job_) {
    // The walk job needs what the HCT job left on the device: bind it as
    // soon as that job is done (before the walk job's first message), and
    // again when the server ran the HCT job anew (it started the plan over,
    // e.g. after a restart): the walk job of the old plan is dropped.
    walk_bound_hct_job_ = hct_role_->job_id();
    walk_role_->Abandon();
    const Status bound = walk_role_->Init(fedwalk::WalkInputsFrom(*hct_role_));
    if (!bound.ok()) return bound;
  }
  if (trim_role_ && !trim_bound_ && compare_role_ && compare_role_->finished()) {
    // Trimming starts from what the comparisons left on the device: bind
    // it as soon as that job is done (before the trimming job's first
    // message, which the server sends only after every device reported).
    // Both stages' roles are bound; the plan runs one. The trimming role
    // takes the comparison keys over; the MCMC role needs the outcomes only.
    trim_bound_ = true;
    NODEFL_TRY(lumos::BindGreedy(*compare_role_, node_.id, trim_storage_.peers.span(), *trim_role_));
    NODEFL_TRY(lumos::BindMcmcGreedy(*compare_role_, mcmc_storage_.peers.span(), *mcmc_role_));
  }
  if (train_role_ && !train_bound_ &&
      ((trim_role_ && trim_role_->finished()) || (mcmc_role_ && mcmc_role_->finished()))) {
    // Training starts from the trees the trimming stage left.
    train_bound_ = true;
    const std::vector<std::pair<uint32_t, bool>> kept = LumosOrientation();
    for (size_t i = 0; i < kept.size() && i < train_peers_.size(); ++i) train_peers_[i].keep = kept[i].second;
    train_role_->Bind();
  }
  return Status::Ok();
}

std::vector<std::pair<uint32_t, bool>> DeviceRoles::LumosOrientation() const {
  std::vector<std::pair<uint32_t, bool>> out;
  if (mcmc_role_ && mcmc_role_->finished()) {
    for (const lumos::McmcPeer& p : mcmc_role_->peers()) out.push_back({p.id, p.keep});
  } else if (trim_role_) {
    for (const lumos::TrimPeer& p : trim_role_->peers()) out.push_back({p.id, p.keep});
  }
  return out;
}

bool DeviceRoles::finished() const {
  const std::string& job = profile_.job;
  if (histogram_role_) return histogram_role_->finished();
  if (job == "fedwalk") return walk_role_ && walk_role_->finished();
  if (job == "secure-compare") return compare_role_ && compare_role_->finished();
  if (job == "secure-aggregate") return secagg_role_ && secagg_role_->finished();
  if (job == "lumos-trees") {
    if (train_role_) return train_role_->finished();
    return (trim_role_ && trim_role_->finished()) || (mcmc_role_ && mcmc_role_->finished());
  }
  if (job == "fedwalk-hct") return hct_role_->finished();
  return echo_role_->finished();
}

}  // namespace nodefl::host::node
