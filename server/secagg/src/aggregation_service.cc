// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/secagg/aggregation_service.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <unordered_set>
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/status.h"
#include "nodefl/server/secagg/unmask.h"

namespace nodefl::server::secagg {
namespace sa = nodefl::secagg;

namespace {

// Frees a vector's storage. `v = {}` is the initializer-list assignment,
// which empties the vector but keeps its capacity: every participant's
// masked vector of every aggregation stayed allocated (5 GB on Cora's
// 2,708 devices after 18 Lumos training epochs).
template <typename T>
void Release(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

bool IsDeviceKind(uint32_t kind) {
  return kind == sa::kAggKey || kind == sa::kAggMasked || kind == sa::kAggShares || kind == sa::kAggRefuse;
}

ConstByteSpan AsBytes(std::span<const uint8_t> bytes) { return ConstByteSpan(bytes.data(), bytes.size()); }

// now + timeout, saturating (a huge timeout means no deadline, not a past one).
uint64_t Deadline(uint64_t now_us, uint64_t timeout_us) {
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  return timeout_us > kNever - now_us ? kNever : now_us + timeout_us;
}

// What a request turns into once checked.
struct Plan {
  std::vector<uint32_t> devices;  // ascending
  uint32_t degree = 0;            // the nominal peers per device, k
  bool full = false;
  uint32_t threshold = 0;  // robust; 0 in paper mode
  uint32_t min_reporters = 0;
};

// An empty string when the request can run; why not otherwise.
std::string Check(const AggregationRequest& request, Plan& plan) {
  plan.devices = request.devices;
  std::sort(plan.devices.begin(), plan.devices.end());
  const auto n = static_cast<uint32_t>(plan.devices.size());
  if (n < 2) return "an aggregation needs at least 2 devices (one has no peer to mask with)";
  if (std::adjacent_find(plan.devices.begin(), plan.devices.end()) != plan.devices.end()) {
    return "a device is listed twice";
  }
  if (request.length == 0 || request.length > sa::kMaxAggLength) return "length must be 1 .. kMaxAggLength words";
  if (request.mode != sa::AggMode::kRobust && request.mode != sa::AggMode::kPaper) return "unknown mode";
  if (request.step_timeout_us == 0) return "step_timeout_us must be positive";
  plan.full = request.peers == 0 || request.peers >= n - 1;
  if (plan.full && n - 1 > sa::kMaxAggPeers)
    return "the full graph would give each device more than kMaxAggPeers peers";
  plan.degree = plan.full ? n - 1 : std::min(request.peers, sa::kMaxAggPeers);
  if (request.mode == sa::AggMode::kPaper) {
    plan.threshold = 0;
    plan.min_reporters = n;  // nobody may drop
    return {};
  }
  plan.threshold = request.threshold != 0 ? request.threshold : plan.degree / 2 + 1;
  if (plan.threshold > plan.degree) return "threshold exceeds the peers per device";
  plan.min_reporters = request.min_reporters != 0 ? request.min_reporters : std::max<uint32_t>(plan.threshold, 2);
  if (plan.min_reporters > n) return "min_reporters exceeds the devices";
  return {};
}

bool Adjacent(const std::vector<uint32_t>& sorted, uint32_t j) {
  return std::binary_search(sorted.begin(), sorted.end(), j);
}

void Join(std::vector<std::vector<uint32_t>>& graph, uint32_t i, uint32_t j) {
  graph[i].insert(std::lower_bound(graph[i].begin(), graph[i].end(), j), j);
  graph[j].insert(std::lower_bound(graph[j].begin(), graph[j].end(), i), i);
}

// A uniformly drawn device other than i.
uint32_t OtherThan(uint32_t i, uint32_t n, Drbg& random) {
  const auto j = static_cast<uint32_t>(random.UniformBelow(n - 1));
  return j >= i ? j + 1 : j;
}

// The mask graph over device indices (ascending index = ascending id), each
// list ascending; an error string instead when it cannot be drawn.
std::string DrawGraph(const Plan& plan, uint64_t seed, uint64_t round, std::vector<std::vector<uint32_t>>& graph) {
  const auto n = static_cast<uint32_t>(plan.devices.size());
  graph.assign(n, {});
  if (plan.full) {
    for (uint32_t i = 0; i < n; ++i) {
      graph[i].reserve(n - 1);
      for (uint32_t j = 0; j < n; ++j) {
        if (j != i) graph[i].push_back(j);
      }
    }
    return {};
  }
  Drbg random;
  if (!random.SeedDeterministic(seed, round).ok()) return "the graph's generator failed";
  // Each device picks ceil(k / 2) distinct others; the relation is made
  // symmetric, so a device ends with its picks plus those that picked it:
  // about k (Bell et al.'s random graph).
  const uint32_t picks = (plan.degree + 1) / 2;
  std::unordered_set<uint32_t> chosen;  // the order does not matter: the lists are sorted below
  for (uint32_t i = 0; i < n; ++i) {
    chosen.clear();
    while (chosen.size() < picks) chosen.insert(OtherThan(i, n, random));
    for (uint32_t j : chosen) {
      graph[i].push_back(j);
      graph[j].push_back(i);
    }
  }
  for (auto& peers : graph) {
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  }
  // The draw leaves some devices below k (those few others picked): join
  // them to random others until they have k. So every device has at least
  // k peers, hence at least the threshold (<= k) holders for its secrets
  // and k - t of slack for dropouts, and a little over k on average.
  for (uint32_t i = 0; i < n; ++i) {
    while (graph[i].size() < plan.degree) {
      const uint32_t j = OtherThan(i, n, random);
      if (!Adjacent(graph[i], j)) Join(graph, i, j);
    }
  }
  for (const auto& peers : graph) {
    if (peers.size() > sa::kMaxAggPeers) return "the random graph gave a device more than kMaxAggPeers peers";
  }
  return {};
}

std::vector<uint8_t> AbortRecord(uint32_t aggregation, sa::AbortReason reason) {
  uint8_t out[sa::kAggAbortBytes];
  sa::EncodeAggAbort(aggregation, static_cast<uint8_t>(reason), out);
  return std::vector<uint8_t>(out, out + sa::kAggAbortBytes);
}

}  // namespace

struct AggregationService::Participant {
  uint32_t id = 0;
  std::vector<uint32_t> peers;  // indices into Aggregation::participants, ascending (so ids ascending too)
  bool live = true;             // still taking part in the current step
  bool misbehaved = false;      // dropped for a record that did not decode: everything after is refused
  bool unreachable = false;
  bool left = false;     // sent kAggRefuse
  uint8_t refusal = 0;   // the StatusCode it gave when it left
  bool told = false;     // got kAggAbort (or left by itself): nothing more is sent to it
  bool awaited = false;  // the current step waits for it
  bool has_key = false;
  std::vector<bool> reached;  // by peer position: its step-1 message went there (its key record)
  // By peer position: the pair masks with that peer (both sent each other
  // their step-1 messages, both kept); fixed when step 1 closes.
  std::vector<bool> mask_edges;
  bool in_mask_set = false;  // finished step 1 and kept: fixed when step 1 closes
  bool reporter = false;     // its masked vector is complete
  std::array<uint8_t, sa::kAggPublicKeyBytes> key{};
  // Step 2: the words so far and which arrived (each exactly once).
  std::vector<uint32_t> words;
  std::vector<bool> received;
  uint32_t words_received = 0;
  // Step 3: what it was asked per peer position, and what it answered.
  bool asked_to_reveal = false;
  std::vector<sa::RevealCode> asked;
  std::vector<bool> revealed;
  uint32_t shares_expected = 0;
  uint32_t shares_received = 0;
};

struct AggregationService::Aggregation {
  AggregationResult result;
  uint64_t step_timeout_us = 0;
  uint64_t deadline_us = 0;
  UploadMemory memory = UploadMemory::kRunningSum;
  std::vector<Participant> participants;  // ascending ids
  uint32_t awaiting = 0;                  // participants the current step still waits for
  std::vector<uint32_t> running_sum;      // UploadMemory::kRunningSum
  // Revealed shares by whose secret they are.
  std::map<uint32_t, std::vector<sa::Share>> self_seed_shares, secret_shares;

  bool paper() const { return result.mode == sa::AggMode::kPaper; }
  bool running() const { return result.state == AggregationState::kRunning; }
  AggregationStep step() const { return result.step; }

  Participant* Find(uint32_t device) { return FindIn(participants, device); }
  const Participant* Find(uint32_t device) const { return FindIn(participants, device); }
  template <typename Participants>
  static auto FindIn(Participants& list, uint32_t device) -> decltype(&list[0]) {
    auto it =
        std::lower_bound(list.begin(), list.end(), device, [](const Participant& p, uint32_t id) { return p.id < id; });
    return it != list.end() && it->id == device ? &*it : nullptr;
  }
  // Position of the device `peer_id` in p's peer list, or -1.
  int64_t PeerPosition(const Participant& p, uint32_t peer_id) const {
    auto it = std::lower_bound(p.peers.begin(), p.peers.end(), peer_id,
                               [&](uint32_t index, uint32_t id) { return participants[index].id < id; });
    if (it == p.peers.end() || participants[*it].id != peer_id) return -1;
    return it - p.peers.begin();
  }
};

AggregationService::AggregationService(uint64_t round_salt, Drbg* blinding)
    : round_salt_(round_salt), blinding_(blinding) {
  if (blinding_ == nullptr) {
    own_blinding_ = std::make_unique<Drbg>();
    // A failure turns the Drbg sticky-failed; Unmask then reports it.
    own_blinding_->SeedDeterministic(round_salt, 0x5A).IgnoreError();
    blinding_ = own_blinding_.get();
  }
}

AggregationService::~AggregationService() = default;

// ---- start -----------------------------------------------------------------

uint32_t AggregationService::Add(const AggregationRequest& request, uint64_t now_us) {
  Plan plan;
  last_refusal_ = Check(request, plan);
  const auto id = static_cast<uint32_t>(aggregations_.size() + 1);
  const uint64_t round = (round_salt_ << 32) | id;
  std::vector<std::vector<uint32_t>> graph;
  if (last_refusal_.empty()) last_refusal_ = DrawGraph(plan, request.graph_seed, round, graph);
  if (!last_refusal_.empty()) {
    ++totals_.refused_requests;
    return 0;
  }
  auto a = std::make_unique<Aggregation>();
  a->result.id = id;
  a->result.round = round;
  a->result.mode = request.mode;
  a->result.length = request.length;
  a->result.threshold = plan.threshold;
  a->result.min_reporters = plan.min_reporters;
  a->result.added_us = now_us;
  a->step_timeout_us = request.step_timeout_us;
  a->deadline_us = Deadline(now_us, request.step_timeout_us);
  a->memory = request.memory;
  a->participants.resize(plan.devices.size());
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    a->participants[i].id = plan.devices[i];
    a->participants[i].peers = std::move(graph[i]);
    a->result.traffic[plan.devices[i]] = DeviceTraffic{};
  }
  Aggregation& agg = *a;
  aggregations_.push_back(std::move(a));
  ++totals_.aggregations;
  ++totals_.running;
  std::vector<uint32_t> ids;
  for (Participant& p : agg.participants) {
    sa::AggStart start;
    start.aggregation = id;
    start.round = round;
    start.length = request.length;
    start.peer_count = static_cast<uint32_t>(p.peers.size());
    start.threshold = static_cast<uint16_t>(plan.threshold);
    start.mode = request.mode;
    uint8_t encoded[sa::kAggStartBytes];
    sa::EncodeAggStart(start, encoded);
    Send(agg, p, sa::kAggStart, std::vector<uint8_t>(encoded, encoded + sa::kAggStartBytes));
    for (size_t offset = 0; offset < p.peers.size(); offset += sa::kAggPeersPerRecord) {
      const size_t count = std::min<size_t>(sa::kAggPeersPerRecord, p.peers.size() - offset);
      ids.clear();
      for (size_t k = 0; k < count; ++k) ids.push_back(agg.participants[p.peers[offset + k]].id);
      std::vector<uint8_t> record(8 + 4 * count);
      // Cannot fail: the record is sized for the run.
      sa::EncodeAggRun(id, static_cast<uint32_t>(offset), Span<const uint32_t>(ids),
                       ByteSpan(record.data(), record.size()))
          .IgnoreError();
      Send(agg, p, sa::kAggPeers, std::move(record));
    }
    ExpectFrom(agg, p);  // its key
  }
  return id;
}

std::vector<AggRecord> AggregationService::TakeRecords() { return std::exchange(outbox_, {}); }

// ---- the device's records ----------------------------------------------------

AggregationService::Outcome AggregationService::OnRecord(uint32_t device, uint32_t kind, std::span<const uint8_t> bytes,
                                                         uint64_t now_us) {
  totals_.bytes_received += bytes.size();
  // Records that name no aggregation this device is in cannot be charged to one.
  const uint32_t id = bytes.size() >= 4 ? LoadU32Le(bytes.data()) : 0;
  if (!IsDeviceKind(kind) || id == 0 || id > aggregations_.size()) {
    ++totals_.records_rejected;
    return Outcome::kRejected;
  }
  Aggregation& a = *aggregations_[id - 1];
  Participant* p = a.Find(device);
  if (p == nullptr) {
    ++totals_.records_rejected;
    return Outcome::kRejected;
  }
  DeviceTraffic& traffic = a.result.traffic[device];
  traffic.bytes_received += bytes.size();
  ++traffic.records_received;
  // A deadline that passed closes its step first. Once the aggregation
  // settled, the handlers below find every step closed: a well-formed record
  // is late, a replay or a malformed one rejected.
  if (a.running()) Advance(a, now_us);
  if (p->misbehaved) return Count(a, Outcome::kRejected);
  Outcome outcome = Outcome::kRejected;
  switch (kind) {
    case sa::kAggKey:
      outcome = OnKey(a, *p, bytes);
      break;
    case sa::kAggMasked:
      outcome = OnMasked(a, *p, bytes);
      break;
    case sa::kAggShares:
      outcome = OnShares(a, *p, bytes);
      break;
    case sa::kAggRefuse:
      outcome = OnRefuse(a, *p, bytes);
      break;
  }
  if (a.running()) Advance(a, now_us);  // the step may be complete now
  return outcome;
}

AggregationService::Outcome AggregationService::OnKey(Aggregation& a, Participant& p, std::span<const uint8_t> bytes) {
  const auto key = sa::DecodeAggKey(AsBytes(bytes), static_cast<uint32_t>(p.peers.size()));
  // An uncompressed point starts with 4.
  if (!key.ok() || key->public_key[0] != 0x04) return Malformed(a, p);
  if (p.has_key) return Count(a, Outcome::kRejected);  // a second key (or a replay of the first)
  if (!p.live || a.step() != AggregationStep::kKeys) return p.left ? Count(a, Outcome::kRejected) : Late(a, p, false);
  std::copy(std::begin(key->public_key), std::end(key->public_key), p.key.begin());
  p.reached.assign(p.peers.size(), false);
  for (size_t i = 0; i < p.peers.size(); ++i) p.reached[i] = sa::AggKeyReached(AsBytes(bytes), static_cast<uint32_t>(i));
  p.has_key = true;
  Answered(a, p);
  return Count(a, Outcome::kAccepted);
}

AggregationService::Outcome AggregationService::OnMasked(Aggregation& a, Participant& p,
                                                         std::span<const uint8_t> bytes) {
  const auto run = sa::DecodeAggRun(AsBytes(bytes));
  if (!run.ok()) return Malformed(a, p);
  // Before its mask set (or without one) it cannot have masked; once its
  // vector is complete every further run repeats words.
  if (a.step() == AggregationStep::kKeys || !p.in_mask_set || p.reporter) return Count(a, Outcome::kRejected);
  if (!p.live || a.step() != AggregationStep::kUploads) return p.left ? Count(a, Outcome::kRejected) : Late(a, p, true);
  const uint64_t end = uint64_t{run->offset} + run->count();
  if (end > a.result.length) return Count(a, Outcome::kRejected);
  if (p.words.empty()) {
    p.words.assign(a.result.length, 0);
    p.received.assign(a.result.length, false);
  }
  for (uint32_t i = run->offset; i < end; ++i) {
    if (p.received[i]) return Count(a, Outcome::kRejected);  // each word exactly once
  }
  for (uint32_t k = 0; k < run->count(); ++k) {
    p.words[run->offset + k] = run->at(k);
    p.received[run->offset + k] = true;
  }
  p.words_received += run->count();
  if (p.words_received == a.result.length) {
    p.reporter = true;
    Release(p.received);
    if (a.memory == UploadMemory::kRunningSum) {
      for (size_t i = 0; i < p.words.size(); ++i) a.running_sum[i] += p.words[i];
      Release(p.words);
    }
    Answered(a, p);
  }
  return Count(a, Outcome::kAccepted);
}

AggregationService::Outcome AggregationService::OnShares(Aggregation& a, Participant& p,
                                                         std::span<const uint8_t> bytes) {
  const auto view = sa::DecodeAggShares(AsBytes(bytes));
  if (!view.ok()) return Malformed(a, p);
  std::vector<sa::RevealedShare> entries;
  for (uint16_t i = 0; i < view->count; ++i) {
    auto entry = sa::RevealedShareAt(*view, i);
    if (!entry.ok()) return Malformed(a, p);
    entries.push_back(*entry);
  }
  if (!p.asked_to_reveal) return Count(a, Outcome::kRejected);  // nobody asked it
  if (!p.live || a.step() != AggregationStep::kReveals)
    return p.left ? Count(a, Outcome::kRejected) : Late(a, p, false);
  // All or nothing: every entry must be one the server asked for and has
  // not had yet.
  std::vector<size_t> positions;
  for (const sa::RevealedShare& e : entries) {
    const int64_t at = a.PeerPosition(p, e.peer);
    if (at < 0) return Count(a, Outcome::kRejected);  // not its peer
    const auto pos = static_cast<size_t>(at);
    if (p.asked[pos] != e.code || p.revealed[pos]) return Count(a, Outcome::kRejected);
    positions.push_back(pos);
  }
  std::vector<size_t> sorted = positions;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return Count(a, Outcome::kRejected);
  for (size_t k = 0; k < entries.size(); ++k) {
    p.revealed[positions[k]] = true;
    sa::Share share;
    share.x = uint64_t{p.id} + 1;  // the holder's point
    std::copy(std::begin(entries[k].y), std::end(entries[k].y), std::begin(share.y));
    auto& shares = entries[k].code == sa::RevealCode::kSelfSeed ? a.self_seed_shares : a.secret_shares;
    shares[entries[k].peer].push_back(share);
  }
  p.shares_received += static_cast<uint32_t>(entries.size());
  if (p.shares_received == p.shares_expected) Answered(a, p);
  return Count(a, Outcome::kAccepted);
}

AggregationService::Outcome AggregationService::OnRefuse(Aggregation& a, Participant& p,
                                                         std::span<const uint8_t> bytes) {
  const Result<sa::AggAbort> refusal = sa::DecodeAggAbort(AsBytes(bytes));
  if (!refusal.ok()) return Malformed(a, p);
  if (!p.live) return p.left ? Count(a, Outcome::kRejected) : Late(a, p, false);
  p.left = true;
  p.refusal = refusal.value().code;
  p.told = true;  // it forgot the aggregation by itself
  Drop(a, p);
  return Count(a, Outcome::kAccepted);
}

// A record that does not decode: the device is treated as gone from here on
// (its later records could not be trusted to mean what they say), and the
// shares it revealed are not used.
AggregationService::Outcome AggregationService::Malformed(Aggregation& a, Participant& p) {
  if (p.live) {
    p.misbehaved = true;
    for (size_t pos = 0; pos < p.revealed.size(); ++pos) {
      if (!p.revealed[pos]) continue;
      auto& shares = p.asked[pos] == sa::RevealCode::kSelfSeed ? a.self_seed_shares : a.secret_shares;
      auto& list = shares[a.participants[p.peers[pos]].id];
      const uint64_t x = uint64_t{p.id} + 1;
      list.erase(std::remove_if(list.begin(), list.end(), [x](const sa::Share& s) { return s.x == x; }), list.end());
    }
    Drop(a, p);
    Tell(a, p, sa::AbortReason::kExcluded);
  }
  return Count(a, Outcome::kRejected);
}

AggregationService::Outcome AggregationService::Late(Aggregation& a, Participant& p, bool upload) {
  if (upload) Tell(a, p, sa::AbortReason::kLate);
  return Count(a, Outcome::kLate);
}

AggregationService::Outcome AggregationService::Count(Aggregation& a, Outcome outcome) {
  switch (outcome) {
    case Outcome::kAccepted:
      ++totals_.records_accepted;
      break;
    case Outcome::kRejected:
      ++totals_.records_rejected;
      ++a.result.rejected_records;
      break;
    case Outcome::kLate:
      ++totals_.records_late;
      ++a.result.late_records;
      break;
  }
  return outcome;
}

// ---- steps -------------------------------------------------------------------

void AggregationService::Poll(uint64_t now_us) {
  for (auto& a : aggregations_) {
    if (a->running()) Advance(*a, now_us);
  }
}

void AggregationService::MarkUnreachable(uint32_t device, uint64_t now_us) {
  for (auto& a : aggregations_) {
    Participant* p = a->Find(device);
    if (p == nullptr) continue;
    p->unreachable = true;
    if (!a->running()) continue;
    Advance(*a, now_us);
    if (!a->running()) continue;
    Drop(*a, *p);
    Advance(*a, now_us);
  }
}

void AggregationService::Cancel(uint32_t id, uint64_t now_us) {
  if (id == 0 || id > aggregations_.size() || !aggregations_[id - 1]->running()) return;
  Abort(*aggregations_[id - 1], sa::AbortReason::kCancelled, "cancelled by the job", now_us);
}

void AggregationService::Advance(Aggregation& a, uint64_t now_us) {
  while (a.running() && (a.awaiting == 0 || now_us >= a.deadline_us)) {
    switch (a.step()) {
      case AggregationStep::kKeys:
        CloseKeys(a, now_us);
        break;
      case AggregationStep::kUploads:
        CloseUploads(a, now_us);
        break;
      case AggregationStep::kReveals:
        Finish(a, now_us);
        break;
      case AggregationStep::kSettled:
        return;
    }
  }
}

void AggregationService::CloseKeys(Aggregation& a, uint64_t now_us) {
  for (Participant& p : a.participants) {
    if (p.live && !p.has_key) {
      Drop(a, p);
      Tell(a, p, sa::AbortReason::kExcluded);
    }
  }
  if (a.paper() && !a.result.dropped_at_keys.empty()) {
    const uint32_t missing = *std::min_element(a.result.dropped_at_keys.begin(), a.result.dropped_at_keys.end());
    // Say why, so that a log tells a device that gave up (e.g. a peer's key
    // never came) from one that was cut off or silent.
    const Participant* m = a.Find(missing);
    std::string why = " did not finish step 1 by its deadline";
    if (m != nullptr && m->left) {
      why = std::string(" left at step 1 (it refused: ") + StatusCodeName(static_cast<StatusCode>(m->refusal)) + ")";
    } else if (m != nullptr && m->misbehaved) {
      why = " sent a malformed record at step 1";
    } else if (m != nullptr && m->unreachable) {
      why = " became unreachable at step 1";
    }
    Abort(a, sa::AbortReason::kTooFewSurvivors,
          "paper mode (kCAGC Protocol 4) has no dropout recovery: device " + std::to_string(missing) + why +
              " (" + std::to_string(a.result.dropped_at_keys.size()) + " dropped at step 1)",
          now_us);
    return;
  }
  // A pair masks only if each side's message reached the other: a device
  // that could not key a peer skipped it (its key record says so), and the
  // peer must then neither wait for its message nor mask with it.
  for (size_t i = 0; i < a.participants.size(); ++i) {
    Participant& p = a.participants[i];
    p.mask_edges.assign(p.peers.size(), false);
    if (!p.live) continue;
    for (size_t k = 0; k < p.peers.size(); ++k) {
      const Participant& q = a.participants[p.peers[k]];
      if (!p.reached[k] || !q.live) continue;
      const auto back = std::lower_bound(q.peers.begin(), q.peers.end(), static_cast<uint32_t>(i));
      p.mask_edges[k] = back != q.peers.end() && *back == i && q.reached[static_cast<size_t>(back - q.peers.begin())];
    }
  }
  if (a.paper()) {
    // Paper mode masks with every peer: a pair that did not exchange keys
    // both ways cannot be left out.
    for (const Participant& p : a.participants) {
      if (!p.live) continue;
      for (size_t k = 0; k < p.peers.size(); ++k) {
        if (p.mask_edges[k]) continue;
        Abort(a, sa::AbortReason::kTooFewSurvivors,
              "paper mode (kCAGC Protocol 4) has no dropout recovery: devices " + std::to_string(p.id) + " and " +
                  std::to_string(a.participants[p.peers[k]].id) + " did not exchange their step-1 messages",
              now_us);
        return;
      }
    }
  } else {
    // A device with fewer mask peers than the threshold could not have its
    // secrets rebuilt: out, and its mask peers lose it, to a fixpoint.
    std::vector<uint32_t> live_peers(a.participants.size(), 0);
    std::vector<uint32_t> below;
    for (size_t i = 0; i < a.participants.size(); ++i) {
      const Participant& p = a.participants[i];
      if (!p.live) continue;
      for (size_t k = 0; k < p.peers.size(); ++k) live_peers[i] += p.mask_edges[k] ? 1 : 0;
      if (live_peers[i] < a.result.threshold) below.push_back(static_cast<uint32_t>(i));
    }
    while (!below.empty()) {
      Participant& p = a.participants[below.back()];
      below.pop_back();
      if (!p.live) continue;
      p.live = false;
      a.result.excluded.push_back(p.id);
      Tell(a, p, sa::AbortReason::kExcluded);
      for (size_t k = 0; k < p.peers.size(); ++k) {
        const uint32_t j = p.peers[k];
        if (p.mask_edges[k] && a.participants[j].live && live_peers[j]-- == a.result.threshold) below.push_back(j);
      }
    }
  }
  uint32_t left = 0;
  for (const Participant& p : a.participants) left += p.live ? 1 : 0;
  if (left < a.result.min_reporters) {
    Abort(a, sa::AbortReason::kTooFewSurvivors,
          std::to_string(left) + " devices finished step 1 with enough peers, fewer than min_reporters " +
              std::to_string(a.result.min_reporters),
          now_us);
    return;
  }
  if (a.memory == UploadMemory::kRunningSum) a.running_sum.assign(a.result.length, 0);
  for (Participant& p : a.participants) {
    if (!p.live) continue;
    p.in_mask_set = true;
    std::vector<uint8_t> record(sa::MaskSetBytes(static_cast<uint32_t>(p.peers.size())), 0);
    StoreU32Le(a.result.id, record.data());
    for (size_t i = 0; i < p.peers.size(); ++i) {
      p.mask_edges[i] = p.mask_edges[i] && a.participants[p.peers[i]].live;
      if (p.mask_edges[i]) sa::SetMaskSetBit(ByteSpan(record.data(), record.size()), static_cast<uint32_t>(i));
    }
    Send(a, p, sa::kAggMaskSet, std::move(record));
    ExpectFrom(a, p);  // its masked vector
  }
  a.result.step = AggregationStep::kUploads;
  a.deadline_us = Deadline(now_us, a.step_timeout_us);
}

void AggregationService::CloseUploads(Aggregation& a, uint64_t now_us) {
  for (Participant& p : a.participants) {
    if (p.live && !p.reporter) {
      Drop(a, p);
      Tell(a, p, sa::AbortReason::kLate);
    }
  }
  uint32_t reporters = 0;
  for (const Participant& p : a.participants) reporters += p.reporter ? 1 : 0;
  if (a.paper()) {
    for (const Participant& p : a.participants) {
      if (p.in_mask_set && !p.reporter) {
        Abort(a, sa::AbortReason::kTooFewSurvivors,
              "paper mode (kCAGC Protocol 4) has no dropout recovery: device " + std::to_string(p.id) +
                  " masked and did not upload",
              now_us);
        return;
      }
    }
    Finish(a, now_us);  // no shares to collect
    return;
  }
  if (reporters < a.result.min_reporters) {
    Abort(a, sa::AbortReason::kTooFewSurvivors,
          std::to_string(reporters) + " devices uploaded, fewer than min_reporters " +
              std::to_string(a.result.min_reporters),
          now_us);
    return;
  }
  // Each reporter still here reveals, per mask-set peer, the one share the
  // server needs of it: the self seed of a reporter, the round secret of a
  // device that masked and did not report.
  for (Participant& p : a.participants) {
    if (!p.live) continue;  // every live device is a reporter now
    p.asked_to_reveal = true;
    p.asked.assign(p.peers.size(), sa::RevealCode::kNothing);
    p.revealed.assign(p.peers.size(), false);
    std::vector<uint8_t> record(sa::RevealBytes(static_cast<uint32_t>(p.peers.size())), 0);
    StoreU32Le(a.result.id, record.data());
    for (size_t i = 0; i < p.peers.size(); ++i) {
      const Participant& q = a.participants[p.peers[i]];
      if (!p.mask_edges[i]) continue;
      p.asked[i] = q.reporter ? sa::RevealCode::kSelfSeed : sa::RevealCode::kRoundSecret;
      sa::SetReveal(ByteSpan(record.data(), record.size()), static_cast<uint32_t>(i), p.asked[i]);
      ++p.shares_expected;
    }
    Send(a, p, sa::kAggReveal, std::move(record));
    if (p.shares_expected > 0) ExpectFrom(a, p);
  }
  a.result.step = AggregationStep::kReveals;
  a.deadline_us = Deadline(now_us, a.step_timeout_us);
}

void AggregationService::Finish(Aggregation& a, uint64_t now_us) {
  // Reporters that have not answered their reveal by now never will (for
  // this aggregation); they stay included.
  for (Participant& p : a.participants) {
    if (p.live && p.awaited) Drop(a, p);
  }
  RoundView view;
  view.paper = a.paper();
  view.round = a.result.round;
  view.threshold = a.paper() ? 1 : a.result.threshold;  // Unmask wants one; paper mode uses none
  view.length = a.result.length;
  uint64_t scalar_multiplications = 0;
  for (Participant& p : a.participants) {
    if (!p.in_mask_set) continue;
    std::vector<uint32_t> reporting_peers;
    for (size_t k = 0; k < p.peers.size(); ++k) {
      const Participant& q = a.participants[p.peers[k]];
      if (p.mask_edges[k] && q.reporter) reporting_peers.push_back(q.id);
    }
    if (p.reporter) {
      view.public_keys[p.id].assign(p.key.begin(), p.key.end());
      if (a.memory == UploadMemory::kKeepVectors) view.masked[p.id] = std::move(p.words);
      if (a.memory == UploadMemory::kRunningSum) view.reporters.push_back(p.id);
      if (!view.paper) view.self_seed_shares[p.id] = std::move(a.self_seed_shares[p.id]);
    } else if (!reporting_peers.empty()) {
      // Masked and did not report: its pair masks with the reporters must
      // come out (a device whose peers all left too needs nothing).
      view.public_keys[p.id].assign(p.key.begin(), p.key.end());
      view.secret_shares[p.id] = std::move(a.secret_shares[p.id]);
      scalar_multiplications += 1 + reporting_peers.size();
      view.peers[p.id] = std::move(reporting_peers);
    }
  }
  if (a.memory == UploadMemory::kRunningSum) view.masked_sum = std::move(a.running_sum);
  const auto started = std::chrono::steady_clock::now();
  RoundResult r = Unmask(view, *blinding_);
  a.result.unmask_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count());
  a.result.scalar_multiplications = scalar_multiplications;
  if (!r.ok()) {
    Abort(a, sa::AbortReason::kUnmaskFailed, r.error, now_us);
    return;
  }
  a.result.sum = std::move(r.sum);
  a.result.included = std::move(r.included);
  a.result.state = AggregationState::kDone;
  ++totals_.done;
  Settle(a, now_us);
}

// ---- bookkeeping -------------------------------------------------------------

// The device takes no further part from now, in the current step:
//   keys: dropped at step 1 (its key, if any, is not used);
//   uploads: dropped at step 2, unless its vector is complete (then it is a
//     reporter that will not be asked to reveal);
//   reveals: a reporter that does not answer (still included).
void AggregationService::Drop(Aggregation& a, Participant& p) {
  if (!p.live) return;
  p.live = false;
  Answered(a, p);
  switch (a.step()) {
    case AggregationStep::kKeys:
      a.result.dropped_at_keys.push_back(p.id);
      break;
    case AggregationStep::kUploads:
      if (p.reporter) {
        a.result.dropped_at_reveals.push_back(p.id);
      } else {
        a.result.dropped_at_uploads.push_back(p.id);
        Release(p.words);
        Release(p.received);
      }
      break;
    case AggregationStep::kReveals:
      a.result.dropped_at_reveals.push_back(p.id);
      break;
    case AggregationStep::kSettled:
      break;
  }
}

void AggregationService::Abort(Aggregation& a, sa::AbortReason reason, std::string message, uint64_t now_us) {
  a.result.state = AggregationState::kAborted;
  a.result.abort_reason = reason;
  a.result.message = std::move(message);
  for (Participant& p : a.participants) Tell(a, p, reason);
  ++totals_.aborted;
  Settle(a, now_us);
}

void AggregationService::Settle(Aggregation& a, uint64_t now_us) {
  --totals_.running;
  a.result.step = AggregationStep::kSettled;
  a.result.wall_us = now_us >= a.result.added_us ? now_us - a.result.added_us : 0;
  for (auto* list :
       {&a.result.dropped_at_keys, &a.result.excluded, &a.result.dropped_at_uploads, &a.result.dropped_at_reveals}) {
    std::sort(list->begin(), list->end());
  }
  // The per-step state goes; the graph stays (late records are still
  // attributed, PeersOf answers).
  for (Participant& p : a.participants) {
    p.live = false;
    p.awaited = false;
    Release(p.words);
    Release(p.received);
    Release(p.asked);
    Release(p.revealed);
    Release(p.reached);
    Release(p.mask_edges);
  }
  a.awaiting = 0;
  Release(a.running_sum);
  a.self_seed_shares.clear();
  a.secret_shares.clear();
}

void AggregationService::Send(Aggregation& a, Participant& p, uint32_t kind, std::vector<uint8_t> bytes) {
  DeviceTraffic& traffic = a.result.traffic[p.id];
  traffic.bytes_sent += bytes.size();
  ++traffic.records_sent;
  totals_.bytes_sent += bytes.size();
  outbox_.push_back(AggRecord{p.id, kind, std::move(bytes)});
}

// kAggAbort, once, to a device that can still hear it.
void AggregationService::Tell(Aggregation& a, Participant& p, sa::AbortReason reason) {
  if (p.told || p.unreachable) return;
  p.told = true;
  Send(a, p, sa::kAggAbort, AbortRecord(a.result.id, reason));
}

void AggregationService::ExpectFrom(Aggregation& a, Participant& p) {
  if (p.awaited) return;
  p.awaited = true;
  ++a.awaiting;
}

void AggregationService::Answered(Aggregation& a, Participant& p) {
  if (!p.awaited) return;
  p.awaited = false;
  --a.awaiting;
}

// ---- reading -------------------------------------------------------------------

const char* StepName(AggregationStep step) {
  switch (step) {
    case AggregationStep::kKeys: return "keys";
    case AggregationStep::kUploads: return "uploads";
    case AggregationStep::kReveals: return "reveals";
    case AggregationStep::kSettled: return "settled";
  }
  return "unknown";
}

const char* AbortReasonName(sa::AbortReason reason) {
  switch (reason) {
    case sa::AbortReason::kExcluded: return "excluded";
    case sa::AbortReason::kTooFewSurvivors: return "too-few-survivors";
    case sa::AbortReason::kLate: return "late";
    case sa::AbortReason::kUnmaskFailed: return "unmask-failed";
    case sa::AbortReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

const AggregationResult& AggregationService::result(uint32_t id) const { return aggregations_.at(id - 1)->result; }

uint32_t AggregationService::awaited(uint32_t id) const {
  const Aggregation& a = *aggregations_.at(id - 1);
  return a.running() ? a.awaiting : 0;
}

std::vector<uint32_t> AggregationService::PeersOf(uint32_t id, uint32_t device) const {
  std::vector<uint32_t> ids;
  if (id == 0 || id > aggregations_.size()) return ids;
  const Aggregation& a = *aggregations_[id - 1];
  const Participant* p = a.Find(device);
  if (p == nullptr) return ids;
  for (uint32_t j : p->peers) ids.push_back(a.participants[j].id);
  return ids;
}

}  // namespace nodefl::server::secagg
