// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkWalkRole end to end, in process: several real DeviceSessions, each
// running the role, behind a small scripted server that answers certificate
// requests from an in-memory deployment PKI, moves every RelaySend to its
// destination as a RelayDeliver, and collects walk results and reports.
// Codebooks encode every vertex as itself (fedwalk_walk_graph.h), so a
// walk's entries are the vertices it visited and can be checked exactly.
#include "nodefl/fedwalk/walk_role.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "fedwalk_walk_graph.h"
#include "heap_counter.h"
#include "nodefl/device/device_session.h"
#include "nodefl/seal/seal.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "session_frames.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::fedwalk {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using device::SessionState;
using testing::WalkWorld;
using ::nodefl::testing::TestIdentity;
using ::nodefl::testing::TestPki;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x77;
constexpr double kEpsilonEach = 0.25;  // exact in binary: ledger sums compare exactly

// One certificate and key per device id for the whole test program, as a
// real device keeps its credentials across restarts and reruns.
::nodefl::testing::LastingIdentities& Identities() {
  static auto* identities = new ::nodefl::testing::LastingIdentities(31);
  return *identities;
}
TestPki& Pki() { return Identities().pki(); }
const TestIdentity& IdentityOf(uint32_t id) { return Identities().Of(id); }

WalkParameters Params(uint16_t length, double p, uint32_t max_pending = 32) {
  WalkParameters w;
  w.mode = PrivacyMode::kStrict;
  w.length = length;
  w.p = p;
  w.epsilon = 2.0;
  w.epsilon_per_encoding = kEpsilonEach;
  w.max_pending_walks = max_pending;
  for (int i = 0; i < 16; ++i) w.salt[i] = static_cast<uint8_t>(i * 7 + 1);
  return w;
}

std::vector<uint8_t> Encoded(const WalkParameters& w) {
  std::vector<uint8_t> out(kWalkParametersBytes);
  EXPECT_TRUE(EncodeWalkParameters(w, out).ok());
  return out;
}

// ---- One device ------------------------------------------------------------------------------

struct DeviceSetup {
  size_t slots = 16;
  size_t cache = 8;
  uint16_t max_length = 64;  // slot memory is sized for walks up to this length
};

class Device {
 public:
  Device(const WalkWorld& world, uint32_t id, const DeviceSetup& setup)
      : id_(id),
        identity_(IdentityOf(id)),
        peers_(world.neighbours[id].size()),
        cache_(setup.cache),
        slots_(setup.slots),
        slot_memory_(setup.slots * WalkSlotBytes(setup.max_length)),
        scratch_(WalkSlotBytes(setup.max_length)),
        parent_(TreeIndex::NodeCount(world.n)),
        leaf_of_(world.n),
        pool_(64),
        ledger_entries_(4),
        // Identity codebooks (every vertex encodes as itself) are exact
        // releases: these tests look at the walks, so the devices allow them.
        ledger(ledger_entries_, PrivacyBudget::Unlimited()),
        role(id, Storage(), credentials_, &crypto::DrbgRandom, &tls_rng_, rng, ledger),
        frame_(kMaxFrame),
        output_(4 * kMaxFrame),
        session(Options(id), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(Pki().Load(identity_, &credentials_).ok());
    EXPECT_TRUE(rng.SeedDeterministic(99, id).ok());
    // Keys need randomness that never repeats (a real device seeds this
    // DRBG from its entropy source); a stream of its own per Device object
    // stands in for that, so a restarted device draws new keys.
    static uint64_t instances = 0;
    EXPECT_TRUE(tls_rng_.SeedDeterministic(98, (uint64_t{id} << 32) | ++instances).ok());
    WalkInputs in;
    in.neighbours = world.neighbours[id];
    in.codebook_pool = world.codebook;
    in.own_row = world.Row(id);
    in.tree = world.tree;
    in.bin_plan = world.plan;
    in.bins = world.bins;
    in.vertex_count = world.n;
    EXPECT_TRUE(role.Init(in).ok());
    EXPECT_TRUE(role.tree_indexed());
    EXPECT_TRUE(session.AddRole(role).ok());
  }

  uint32_t id() const { return id_; }
  const std::vector<uint8_t>& certificate_der() const { return identity_.certificate_der; }

 private:
  WalkStorage Storage() {
    return WalkStorage{peers_, cache_, slots_, slot_memory_, scratch_, parent_, leaf_of_, pool_};
  }
  static SessionOptions Options(uint32_t id) {
    SessionOptions o;
    o.device_id = id;
    o.ack_every = 1000;  // acks only from Poll: fewer frames to look at
    return o;
  }

  uint32_t id_;
  TestIdentity identity_;
  tls::TlsCredentials credentials_;
  Drbg tls_rng_;
  std::vector<roles::KeyedPeer> peers_, cache_;
  std::vector<WalkSlot> slots_;
  std::vector<uint8_t> slot_memory_, scratch_;
  std::vector<uint32_t> parent_, leaf_of_, pool_;
  std::vector<LedgerEntry> ledger_entries_;

 public:
  Drbg rng;
  PrivacyLedger ledger;
  FedWalkWalkRole role;

 private:
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
};

// ---- The server --------------------------------------------------------------------------------

struct WalkResultRecord {
  uint32_t device = 0;
  WalkResultHeader header;
  std::vector<uint32_t> ids;
};

struct ReportRecord {
  uint32_t device = 0;
  uint32_t round = 0;
  nodefl_wire_JobReport body;
};

class Server {
 public:
  explicit Server(const WalkWorld& world, std::vector<uint32_t> ids, const std::map<uint32_t, DeviceSetup>& setups = {})
      : world_(world), setups_(setups) {
    for (uint32_t id : ids) {
      auto it = setups.find(id);
      devices_[id] = std::make_unique<Device>(world, id, it == setups.end() ? DeviceSetup{} : it->second);
    }
    for (auto& [id, d] : devices_) {
      EXPECT_TRUE(d->session.Start(now).ok());
      d->session.ConsumeOutput(d->session.PendingOutput().size());  // Hello
      EXPECT_TRUE(Feed(*d, Welcome(id, false)).ok());
      EXPECT_EQ(d->session.state(), SessionState::kReady);
    }
  }

  Device& operator[](uint32_t id) { return *devices_.at(id); }

  // ---- Frames to devices
  static nodefl_wire_Envelope Envelope(pb_size_t tag, uint64_t job_id = kJob, uint32_t round = 0) {
    return ::nodefl::testing::AddressedEnvelope(tag, job_id, round);
  }
  std::vector<uint8_t> Frame(uint32_t to, const nodefl_wire_Envelope& e) {
    return ::nodefl::testing::FrameTo(e, ++seq_[to]);
  }
  std::vector<uint8_t> Welcome(uint32_t to, bool resumed) {
    seq_[to] = 0;
    auto e = Envelope(nodefl_wire_Envelope_welcome_tag, 0);
    e.body.welcome.resume_token.size = 32;
    std::memset(e.body.welcome.resume_token.bytes, 0x33, 32);
    e.body.welcome.resumed = resumed;
    return Frame(to, e);
  }
  std::vector<uint8_t> JobStart(uint32_t to, uint32_t round, const std::vector<uint8_t>& params,
                                uint32_t deadline_ms = 0) {
    auto e = Envelope(nodefl_wire_Envelope_job_start_tag, job, round);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS;
    e.body.job_start.deadline_ms = deadline_ms;
    if (!params.empty()) std::memcpy(e.body.job_start.parameters.bytes, params.data(), params.size());
    e.body.job_start.parameters.size = static_cast<pb_size_t>(params.size());
    return Frame(to, e);
  }
  std::vector<uint8_t> StartWalks(uint32_t to, const std::vector<StartWalk>& walks) {
    auto e = Envelope(nodefl_wire_Envelope_job_data_tag, job, kWalkRoundWalks);
    e.body.job_data.kind = static_cast<uint32_t>(WalkRecord::kStartWalks);
    Result<size_t> n = EncodeStartWalks(Span<const StartWalk>(walks.data(), walks.size()),
                                        ByteSpan(e.body.job_data.data.bytes));
    EXPECT_TRUE(n.ok());
    e.body.job_data.data.size = static_cast<pb_size_t>(n.ok() ? *n : 0);
    return Frame(to, e);
  }
  std::vector<uint8_t> Deliver(uint32_t to, uint32_t from, const std::vector<uint8_t>& sealed) {
    auto e = Envelope(nodefl_wire_Envelope_relay_deliver_tag, job, kWalkRoundWalks);
    e.body.relay_deliver.src = from;
    e.body.relay_deliver.relay_id = ++relay_ids_[to];
    std::memcpy(e.body.relay_deliver.sealed.bytes, sealed.data(), sealed.size());
    e.body.relay_deliver.sealed.size = static_cast<pb_size_t>(sealed.size());
    return Frame(to, e);
  }

  // ---- Moving bytes
  Status Feed(Device& d, const std::vector<uint8_t>& frame) {
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      const Status s = d.session.OnReceived(ConstByteSpan(frame).subspan(pos), now, &consumed);
      if (!s.ok()) return s;
      pos += consumed;
      Collect(d);  // room for the rest
    }
    return Status::Ok();
  }
  // One frame, with the heap counter watching the session and the role
  // only (the harness reads the output afterwards).
  void FeedNoHeap(Device& d, const std::vector<uint8_t>& frame) {
    size_t consumed = 0;
    Status s;
    NODEFL_EXPECT_NO_HEAP(s = d.session.OnReceived(frame, now, &consumed));
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(consumed, frame.size());
    Collect(d);
  }
  void Send(uint32_t to, std::vector<uint8_t> frame) { inbox_[to].push_back(std::move(frame)); }
  void SendAll(uint32_t round, const std::vector<uint8_t>& params, uint32_t deadline_ms = 0) {
    for (auto& [id, d] : devices_) Send(id, JobStart(id, round, params, deadline_ms));
  }

  // Reads what the device wrote and acts on it like the real server.
  void Collect(Device& d) {
    ::nodefl::testing::DrainSessionOutput(d.session, [&](const nodefl_wire_Envelope& e) { Handle(d.id(), e); });
  }

  void Handle(uint32_t from, const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_job_key_tag: {
        const auto& k = e.body.job_key.public_key;
        job_keys[from] = std::vector<uint8_t>(k.bytes, k.bytes + k.size);
        ++job_key_announcements[from];
        AnswerWaitingKeyRequests();
        break;
      }
      case nodefl_wire_Envelope_peer_key_request_tag:
        ++key_requests[from];
        for (pb_size_t i = 0; i < e.body.peer_key_request.device_ids_count; ++i) {
          const uint32_t id = e.body.peer_key_request.device_ids[i];
          if (drop_key_requests || drop_key_requests_from.count(from) != 0) continue;
          waiting_key_requests_.push_back({from, id, e.job_id, e.round});
        }
        AnswerWaitingKeyRequests();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        ++relays;
        const auto& r = e.body.relay_send;
        EXPECT_EQ(e.job_id, job);
        EXPECT_EQ(e.round, kWalkRoundWalks);
        std::vector<uint8_t> sealed(r.sealed.bytes, r.sealed.bytes + r.sealed.size);
        captured.push_back({from, r.dst, sealed});
        if (devices_.count(r.dst) == 0) {
          ADD_FAILURE() << "relay to unknown device " << r.dst;
          break;
        }
        if (!hold_relays) Send(r.dst, Deliver(r.dst, from, sealed));
        break;
      }
      case nodefl_wire_Envelope_job_data_tag: {
        const ConstByteSpan data = protocol::BytesOf(e.body.job_data.data);
        if (e.body.job_data.kind == static_cast<uint32_t>(WalkRecord::kWalkResult)) {
          Result<WalkResultHeader> h = DecodeWalkResult(data);
          EXPECT_TRUE(h.ok());
          if (!h.ok()) break;
          WalkResultRecord rec{from, *h, {}};
          for (size_t i = 0; i < h->count; ++i) rec.ids.push_back(WalkIdAt(data.subspan(12), i));
          results.push_back(rec);
        } else if (e.body.job_data.kind == static_cast<uint32_t>(WalkRecord::kDroppedStarts)) {
          Result<uint32_t> n = DecodeDroppedStarts(data);
          EXPECT_TRUE(n.ok());
          for (uint32_t i = 0; n.ok() && i < *n; ++i) dropped_starts.push_back(WalkIdAt(data.subspan(4), i));
        } else {
          ADD_FAILURE() << "unexpected JobData kind " << e.body.job_data.kind;
        }
        break;
      }
      case nodefl_wire_Envelope_job_report_tag:
        reports.push_back({from, e.round, e.body.job_report});
        break;
      default:
        break;  // acks, heartbeats
    }
  }

  // Like the real server: a certificate with the peer's announced job key,
  // once the peer has announced one (found = false for unknown peers).
  void AnswerWaitingKeyRequests() {
    std::vector<KeyRequest> still;
    for (const KeyRequest& r : waiting_key_requests_) {
      const bool known = devices_.count(r.id) > 0 && missing_certificates.count(r.id) == 0;
      if (known && job_keys.count(r.id) == 0) {
        still.push_back(r);
        continue;
      }
      auto c = Envelope(nodefl_wire_Envelope_peer_certificate_tag, r.job, r.round);
      c.body.peer_certificate.device_id = r.id;
      c.body.peer_certificate.found = known;
      if (known) {
        // The device's own certificate (issuing anew would make a new key).
        const std::vector<uint8_t>& der = devices_.at(r.id)->certificate_der();
        std::memcpy(c.body.peer_certificate.certificate_der.bytes, der.data(), der.size());
        c.body.peer_certificate.certificate_der.size = static_cast<pb_size_t>(der.size());
        const std::vector<uint8_t>& key = job_keys.at(r.id);
        std::memcpy(c.body.peer_certificate.job_key.bytes, key.data(), key.size());
        c.body.peer_certificate.job_key.size = static_cast<pb_size_t>(key.size());
      }
      Send(r.from, Frame(r.from, c));
    }
    waiting_key_requests_.swap(still);
  }

  // Delivers everything queued and polls every device until nothing moves.
  void Pump(int max_rounds = 200) {
    for (int round = 0; round < max_rounds; ++round) {
      bool moved = false;
      for (auto& [id, d] : devices_) {
        std::vector<std::vector<uint8_t>> frames;
        frames.swap(inbox_[id]);
        for (const auto& f : frames) {
          EXPECT_TRUE(Feed(*d, f).ok());
          moved = true;
        }
      }
      for (auto& [id, d] : devices_) {
        EXPECT_TRUE(d->session.Poll(now).ok());
        if (!d->session.PendingOutput().empty()) moved = true;
        Collect(*d);
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "no quiescence";
  }

  void Reconnect(uint32_t id) {
    Device& d = *devices_.at(id);
    inbox_[id].clear();  // what the server had queued died with the connection
    ASSERT_TRUE(d.session.Reconnect(now).ok());
    d.session.ConsumeOutput(d.session.PendingOutput().size());  // Hello
    ASSERT_TRUE(Feed(d, Welcome(id, true)).ok());
  }

  // The device's app restarts: all its state is gone; a new process (a new
  // Device) registers afresh (the server did not keep its session) and is
  // sent the job's rounds again by the caller.
  void Restart(uint32_t id) {
    inbox_[id].clear();
    auto it = setups_.find(id);
    devices_[id] = std::make_unique<Device>(world_, id, it == setups_.end() ? DeviceSetup{} : it->second);
    Device& d = *devices_[id];
    ASSERT_TRUE(d.session.Start(now).ok());
    d.session.ConsumeOutput(d.session.PendingOutput().size());  // Hello
    relay_ids_[id] = 0;
    ASSERT_TRUE(Feed(d, Welcome(id, false)).ok());
  }

  std::vector<ReportRecord> ReportsOf(uint32_t round) const {
    std::vector<ReportRecord> out;
    for (const auto& r : reports) {
      if (r.round == round) out.push_back(r);
    }
    return out;
  }

  uint64_t now = 5'000;
  uint64_t job = kJob;  // the job id of what the server sends
  std::map<uint32_t, uint32_t> key_requests;
  std::map<uint32_t, std::vector<uint8_t>> job_keys;  // announced, per device
  std::map<uint32_t, uint32_t> job_key_announcements;
  std::set<uint32_t> missing_certificates;
  bool drop_key_requests = false;
  std::set<uint32_t> drop_key_requests_from;  // these devices' requests are never answered
  bool hold_relays = false;
  uint64_t relays = 0;
  struct Captured {
    uint32_t src, dst;
    std::vector<uint8_t> sealed;
  };
  std::vector<Captured> captured;
  std::vector<WalkResultRecord> results;
  std::vector<uint32_t> dropped_starts;
  std::vector<ReportRecord> reports;

 private:
  struct KeyRequest {
    uint32_t from, id;
    uint64_t job;
    uint32_t round;
  };
  std::vector<KeyRequest> waiting_key_requests_;
  const WalkWorld& world_;
  std::map<uint32_t, DeviceSetup> setups_;
  std::map<uint32_t, std::unique_ptr<Device>> devices_;
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> inbox_;
  std::map<uint32_t, uint64_t> seq_;
  std::map<uint32_t, uint64_t> relay_ids_;
};

// The path 1 - 2 - 3 (vertex 0 takes no part), one bin, tree ((1,2),3):
// device 1's predicted 2-hop neighbour through 2 is 3, and 3's through 2
// is 1, neither a neighbour of the other.
WalkWorld PathWorld() {
  return WalkWorld::FromGraph(4, 1, {{1, 2}, {2, 3}}, {kAbsentBin, 0, 0, 0}, {1, 2, 3},
                              {{0, 1, 1.0f}, {3, 2, 2.0f}});
}

void RunKeysRound(Server& server, const WalkParameters& params) {
  server.SendAll(kWalkRoundKeys, Encoded(params));
  server.Pump();
  for (const auto& r : server.ReportsOf(kWalkRoundKeys)) {
    EXPECT_EQ(r.body.code, 0u) << "device " << r.device;
    EXPECT_EQ(r.body.kind, nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS);
  }
  server.SendAll(kWalkRoundWalks, {});
  server.Pump();
}

uint64_t LedgerReleases(Device& d) {
  uint64_t releases = 0;
  for (const LedgerEntry& e : d.ledger.entries()) {
    EXPECT_EQ(e.phase, kPhaseWalks);
    EXPECT_EQ(e.mechanism, Mechanism::kExponential);
    EXPECT_EQ(e.mode, PrivacyMode::kStrict);
    releases += e.releases;
  }
  return releases;
}

// ---- Tests -------------------------------------------------------------------------------------

TEST(FedWalkWalkRoleTest, TwoHopJumpsFetchStrangersKeysOnDemand) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  RunKeysRound(server, Params(5, 1.0));
  ASSERT_EQ(server.ReportsOf(kWalkRoundKeys).size(), 3u);
  EXPECT_EQ(server.key_requests[1], 1u);  // its one neighbour
  EXPECT_EQ(server.key_requests[2], 1u);  // both in one request

  // Walk 9 from device 1 with p = 1: 1 encodes 2 and jumps to 3 (a
  // stranger); 3 encodes itself and 2 and jumps to 1 (a stranger to it);
  // 1 encodes itself and 2: complete after two messages.
  server.Send(1, server.StartWalks(1, {{9, 5}}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  const WalkResultRecord& r = server.results[0];
  EXPECT_EQ(r.device, 1u);
  EXPECT_EQ(r.header.walk_id, 9u);
  EXPECT_EQ(r.header.outcome, WalkOutcome::kComplete);
  EXPECT_EQ(r.header.hops, 2);
  EXPECT_EQ(r.ids, (std::vector<uint32_t>{2, 3, 2, 1, 2}));
  EXPECT_EQ(server.relays, 2u);
  // Both ends asked for the other's certificate when they first needed it.
  EXPECT_EQ(server.key_requests[1], 2u);
  EXPECT_EQ(server.key_requests[3], 2u);
  EXPECT_EQ(server.key_requests[2], 1u);
  EXPECT_EQ(server[1].role.stats().predicted, 1u);
  EXPECT_EQ(server[3].role.stats().predicted, 1u);
  EXPECT_EQ(server[3].role.stats().received, 1u);  // held sealed, opened once the key came
  EXPECT_EQ(server[2].role.stats().received, 0u);  // skipped by both jumps
  // Every entry is one recorded release.
  EXPECT_EQ(LedgerReleases(server[1]), 3u);
  EXPECT_EQ(LedgerReleases(server[3]), 2u);
  EXPECT_EQ(LedgerReleases(server[2]), 0u);
  EXPECT_EQ(server[1].ledger.total_epsilon(), 3 * kEpsilonEach);

  // Round 3: the reports.
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  const auto reports = server.ReportsOf(kWalkRoundReport);
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& rep : reports) {
    EXPECT_EQ(rep.body.code, 0u);
    Device& d = server[rep.device];
    EXPECT_EQ(rep.body.releases, LedgerReleases(d));
    EXPECT_EQ(rep.body.epsilon, d.ledger.phase_epsilon(kPhaseWalks));
    EXPECT_EQ(rep.body.rejected, 0u);
    EXPECT_EQ(rep.body.duplicates, 0u);
    EXPECT_TRUE(d.role.finished());
  }
  const auto& r1 = *std::find_if(reports.begin(), reports.end(), [](const ReportRecord& x) { return x.device == 1; });
  EXPECT_EQ(r1.body.expected, 1u);  // started
  EXPECT_EQ(r1.body.sent, 1u);
  EXPECT_EQ(r1.body.received, 1u);  // finished here
}

TEST(FedWalkWalkRoleTest, NeighbourJumpsFetchNoStrangersKeys) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  WalkParameters params = Params(5, 1.0);
  params.predictor = JumpPredictor::kNeighbours;
  RunKeysRound(server, params);
  const std::map<uint32_t, uint32_t> round1_requests = server.key_requests;
  // Walk 9 from device 1 with p = 1: 1 encodes 2 and has no other
  // neighbour to jump to, so it forwards to 2; 2 encodes one neighbour and
  // jumps to the other (a neighbour of its own, keyed in round 1), which
  // encodes itself; and so on: 5 entries, alternating ends of the path.
  server.Send(1, server.StartWalks(1, {{9, 5}}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  const WalkResultRecord& r = server.results[0];
  EXPECT_EQ(r.header.outcome, WalkOutcome::kComplete);
  ASSERT_EQ(r.ids.size(), 5u);
  EXPECT_EQ(r.ids[0], 2u);
  EXPECT_TRUE((r.ids[1] == 1u && r.ids[2] == 3u) || (r.ids[1] == 3u && r.ids[2] == 1u)) << r.ids[1] << r.ids[2];
  EXPECT_EQ(server[2].role.stats().predicted, 1u);
  EXPECT_EQ(server.relays, 3u);  // 1 -> 2, the jump from 2, then a forward to 2
  // Nobody asked for a certificate after round 1.
  EXPECT_EQ(server.key_requests, round1_requests);
}

TEST(FedWalkWalkRoleTest, ManyWalksAcrossARingAllComplete) {
  const WalkWorld world = WalkWorld::Make(8, 2, 3, 17);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < world.n; ++v) ids.push_back(v);
  Server server(world, ids);
  const uint16_t l = 12;
  RunKeysRound(server, Params(l, 0.3));
  ASSERT_EQ(server.ReportsOf(kWalkRoundKeys).size(), world.n);
  uint32_t next_walk = 100;
  for (uint32_t v : ids) {
    std::vector<StartWalk> walks;
    for (int i = 0; i < 6; ++i) walks.push_back({next_walk++, l});
    server.Send(v, server.StartWalks(v, walks));
  }
  server.Pump();
  const size_t walks = 6 * world.n;
  ASSERT_EQ(server.results.size(), walks);
  EXPECT_TRUE(server.dropped_starts.empty());
  uint64_t hops = 0, entries = 0, jumps = 0;
  std::set<uint32_t> seen;
  for (const auto& r : server.results) {
    EXPECT_EQ(r.header.outcome, WalkOutcome::kComplete);
    EXPECT_EQ(r.header.count, l);
    EXPECT_TRUE(seen.insert(r.header.walk_id).second) << "walk " << r.header.walk_id << " twice";
    hops += r.header.hops;
    entries += r.ids.size();
    // Identity codebook: each entry is a neighbour of the previous one,
    // except after a 2-hop jump (where it is in the previous one's pool).
    for (size_t i = 1; i < r.ids.size(); ++i) {
      if (world.adjacency[r.ids[i - 1]].count(r.ids[i]) == 0) ++jumps;
    }
    EXPECT_LE(r.header.hops, l - 1);
    EXPECT_GE(r.header.hops, (l - 1) / 2);
  }
  // Every message the relay moved belongs to exactly one walk's hops.
  EXPECT_EQ(hops, server.relays);
  EXPECT_GT(jumps, 0u);  // some jumps left the 1-hop neighbourhood
  // Ledger: one release per entry, device by device summing to the total.
  uint64_t releases = 0, sent = 0, finished = 0, started = 0;
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  for (const auto& rep : server.ReportsOf(kWalkRoundReport)) {
    Device& d = server[rep.device];
    const uint64_t mine = LedgerReleases(d);
    EXPECT_EQ(rep.body.releases, mine);
    EXPECT_EQ(d.ledger.total_epsilon(), static_cast<double>(mine) * kEpsilonEach);
    EXPECT_EQ(rep.body.epsilon, static_cast<double>(mine) * kEpsilonEach);
    releases += mine;
    sent += rep.body.sent;
    finished += rep.body.received;
    started += rep.body.expected;
    EXPECT_EQ(rep.body.rejected, 0u);
  }
  EXPECT_EQ(releases, entries);
  EXPECT_EQ(sent, server.relays);
  EXPECT_EQ(finished, walks);
  EXPECT_EQ(started, walks);
}

TEST(FedWalkWalkRoleTest, FullQueuesDropWalksButNeverLoseThem) {
  const WalkWorld world = PathWorld();
  // Device 2 holds one walk at a time.
  Server server(world, {1, 2, 3}, {{2, DeviceSetup{/*slots=*/1}}});
  RunKeysRound(server, Params(3, 0.0));
  EXPECT_EQ(server[2].role.queue_capacity(), 1u);

  // Three walks started at 2: one fits, two come back as dropped starts,
  // in the same breath (no heap on this path: no sealing involved).
  const auto frame = server.StartWalks(2, {{1, 3}, {2, 3}, {3, 3}});
  server.FeedNoHeap(server[2], frame);
  EXPECT_EQ(server.dropped_starts, (std::vector<uint32_t>{2, 3}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  EXPECT_EQ(server.results[0].header.walk_id, 1u);
  EXPECT_EQ(server.results[0].header.count, 3);

  // Two walks arrive at 2 before it polls: the first, stepped and waiting
  // only for the session, goes on while the second is handled (the one
  // message a handler may send), and the second takes its slot.
  server.results.clear();
  server.Send(1, server.StartWalks(1, {{11, 3}}));
  server.Send(3, server.StartWalks(3, {{33, 3}}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 2u);
  for (const auto& r : server.results) {
    EXPECT_EQ(r.header.outcome, WalkOutcome::kComplete) << r.header.walk_id;
    EXPECT_EQ(r.header.count, 3);
  }
  EXPECT_EQ(server[2].role.stats().dropped, 0u);
  EXPECT_EQ(server[2].role.stats().dropped_starts, 2u);
  EXPECT_EQ(server[2].role.stats().lost, 0u);

  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  for (const auto& rep : server.ReportsOf(kWalkRoundReport)) {
    if (rep.device != 2) continue;
    EXPECT_EQ(rep.body.expected, 3u);
    EXPECT_EQ(rep.body.rejected, 2u);  // two dropped starts
    EXPECT_EQ(rep.body.releases, LedgerReleases(server[2]));
  }
}

TEST(FedWalkWalkRoleTest, AFullQueueDropsArrivalsWhenNothingHeldCanLeave) {
  const WalkWorld world = PathWorld();
  // Device 3 holds one walk, and never gets a stranger's key.
  Server server(world, {1, 2, 3}, {{3, DeviceSetup{/*slots=*/1}}});
  RunKeysRound(server, Params(5, 1.0));
  server.drop_key_requests_from = {3};
  // Walk 9: 1 encodes 2 and jumps to 3, a stranger to 3: held sealed until
  // a key that does not come. Its slot cannot be freed by sending.
  server.Send(1, server.StartWalks(1, {{9, 5}}));
  server.Pump();
  EXPECT_TRUE(server.results.empty());
  ASSERT_EQ(server[3].role.stats().received, 0u);
  // Walk 8 takes the same way: 3 has no room and nothing it could send to
  // make some, so the walk is lost there (unreadable without the key).
  server.Send(1, server.StartWalks(1, {{8, 5}}));
  server.Pump();
  EXPECT_TRUE(server.results.empty());
  EXPECT_EQ(server[3].role.stats().lost, 1u);
  EXPECT_EQ(server[3].role.stats().forwarded, 0u);
}

TEST(FedWalkWalkRoleTest, WalksThatOnlyEndHereTouchNoHeap) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  RunKeysRound(server, Params(3, 0.0));
  Device& d = server[2];
  const auto frame = server.StartWalks(2, {{1, 1}, {2, 1}, {3, 1}});
  server.FeedNoHeap(d, frame);
  EXPECT_EQ(d.role.held_walks(), 3u);
  Status polled;
  NODEFL_EXPECT_NO_HEAP(polled = d.session.Poll(server.now));
  ASSERT_TRUE(polled.ok());
  server.Collect(d);
  ASSERT_EQ(server.results.size(), 3u);
  for (const auto& r : server.results) {
    EXPECT_EQ(r.header.count, 1);
    EXPECT_EQ(r.header.hops, 0);
    EXPECT_TRUE(r.ids[0] == 1 || r.ids[0] == 3);
  }
  EXPECT_EQ(LedgerReleases(d), 3u);
}

TEST(FedWalkWalkRoleTest, ReplaysTamperingAndStrangersAreCountedNotFatal) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  RunKeysRound(server, Params(6, 0.0));
  server.hold_relays = true;  // the test delivers by hand
  server.Send(1, server.StartWalks(1, {{5, 6}}));
  server.Pump();
  ASSERT_EQ(server.captured.size(), 1u);
  const auto walk = server.captured[0];
  ASSERT_EQ(walk.dst, 2u);
  Device& two = server[2];
  // Tampered: refused.
  std::vector<uint8_t> tampered = walk.sealed;
  tampered[20] ^= 1;
  ASSERT_TRUE(server.Feed(two, server.Deliver(2, 1, tampered)).ok());
  EXPECT_EQ(two.role.stats().rejected, 1u);
  // The genuine one, then a replay of it under a new relay id.
  ASSERT_TRUE(server.Feed(two, server.Deliver(2, 1, walk.sealed)).ok());
  ASSERT_TRUE(server.Feed(two, server.Deliver(2, 1, walk.sealed)).ok());
  EXPECT_EQ(two.role.stats().received, 1u);
  EXPECT_EQ(two.role.stats().duplicates, 1u);
  // Re-addressed: device 3 cannot open what 1 sealed for 2 (and 1 is a
  // stranger to 3, whose key it first fetches).
  ASSERT_TRUE(server.Feed(server[3], server.Deliver(3, 1, walk.sealed)).ok());
  server.hold_relays = false;
  server.Pump();
  EXPECT_EQ(server[3].role.stats().rejected, 1u);
  // A JobData kind the device does not take, and a malformed record.
  auto odd = server.Envelope(nodefl_wire_Envelope_job_data_tag, kJob, kWalkRoundWalks);
  odd.body.job_data.kind = 9;
  ASSERT_TRUE(server.Feed(two, server.Frame(2, odd)).ok());
  odd.body.job_data.kind = static_cast<uint32_t>(WalkRecord::kStartWalks);
  odd.body.job_data.data.size = 3;
  ASSERT_TRUE(server.Feed(two, server.Frame(2, odd)).ok());
  EXPECT_EQ(two.role.stats().rejected, 3u);
  EXPECT_EQ(two.session.state(), SessionState::kReady);
  // The genuine walk still completed.
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  EXPECT_EQ(server.results[0].header.count, 6);
}

TEST(FedWalkWalkRoleTest, MissingCertificatesEndWalksAsDropped) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  server.missing_certificates = {3};  // nobody can get 3's key
  server.SendAll(kWalkRoundKeys, Encoded(Params(5, 1.0)));
  server.Pump();
  for (const auto& r : server.ReportsOf(kWalkRoundKeys)) {
    // 2 could not get its neighbour 3's key.
    const uint32_t want = r.device == 2 ? static_cast<uint32_t>(StatusCode::kUnauthenticated) : 0u;
    EXPECT_EQ(r.body.code, want) << r.device;
  }
  server.SendAll(kWalkRoundWalks, {});
  server.Send(1, server.StartWalks(1, {{4, 5}}));
  server.Pump();
  // 1 jumps towards 3, whose certificate is not found: the walk ends at 1.
  ASSERT_EQ(server.results.size(), 1u);
  EXPECT_EQ(server.results[0].header.outcome, WalkOutcome::kDropped);
  EXPECT_EQ(server.results[0].header.hops, 0);
  EXPECT_EQ(server.results[0].ids, (std::vector<uint32_t>{2}));
  EXPECT_EQ(server.relays, 0u);
}

TEST(FedWalkWalkRoleTest, ReconnectReRequestsKeysAndRepeatsTheReport) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  server.drop_key_requests = true;  // the answers never come on this connection
  server.SendAll(kWalkRoundKeys, Encoded(Params(5, 0.5)));
  server.Pump();
  EXPECT_TRUE(server.ReportsOf(kWalkRoundKeys).empty());
  EXPECT_EQ(server.key_requests[2], 1u);
  server.drop_key_requests = false;
  server.Reconnect(2);
  server.Pump();
  EXPECT_EQ(server.key_requests[2], 2u);  // asked again
  ASSERT_EQ(server.ReportsOf(kWalkRoundKeys).size(), 1u);  // 2's; 1 and 3 still wait
  EXPECT_EQ(server.ReportsOf(kWalkRoundKeys)[0].device, 2u);
  server.Reconnect(1);
  server.Reconnect(3);
  server.Pump();
  ASSERT_EQ(server.ReportsOf(kWalkRoundKeys).size(), 3u);
  // A reconnect after the report: the report goes out again.
  server.Reconnect(2);
  server.Pump();
  const auto reports = server.ReportsOf(kWalkRoundKeys);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(std::count_if(reports.begin(), reports.end(), [](const ReportRecord& r) { return r.device == 2; }), 2);
}

TEST(FedWalkWalkRoleTest, KeysRoundDeadlineIsReported) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  server.drop_key_requests = true;
  server.SendAll(kWalkRoundKeys, Encoded(Params(5, 0.5)), /*deadline_ms=*/100);
  server.Pump();
  EXPECT_TRUE(server.ReportsOf(kWalkRoundKeys).empty());
  server.now += 200'000;
  server.Pump();
  const auto reports = server.ReportsOf(kWalkRoundKeys);
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& r : reports) EXPECT_EQ(r.body.code, static_cast<uint32_t>(StatusCode::kDeadlineExceeded));
}

TEST(FedWalkWalkRoleTest, ADeviceWithoutRoomForTheWalksRefusesThem) {
  const WalkWorld world = PathWorld();
  // Slots cut for walks of 4 at most; the job runs walks of 40.
  Server server(world, {1, 2, 3}, {{2, DeviceSetup{16, 8, /*max_length=*/4}}});
  server.SendAll(kWalkRoundKeys, Encoded(Params(40, 0.0)));
  server.Pump();
  for (const auto& r : server.ReportsOf(kWalkRoundKeys)) {
    const uint32_t want = r.device == 2 ? static_cast<uint32_t>(StatusCode::kResourceExhausted) : 0u;
    EXPECT_EQ(r.body.code, want) << r.device;
  }
  EXPECT_TRUE(server[2].role.refused());
  server.SendAll(kWalkRoundWalks, {});
  server.Send(2, server.StartWalks(2, {{1, 40}, {2, 40}}));
  server.Send(1, server.StartWalks(1, {{3, 40}}));
  server.Pump();
  EXPECT_EQ(server.dropped_starts, (std::vector<uint32_t>{1, 2}));
  // The walk from 1 reached 2, which could not take it.
  EXPECT_EQ(server[2].role.stats().lost, 1u);
  EXPECT_TRUE(server.results.empty());
}

TEST(FedWalkWalkRoleTest, RoundThreeEndsHeldWalksAsDropped) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  RunKeysRound(server, Params(6, 1.0));
  // The key answers for strangers never come: 1's walk waits for 3's key.
  server.drop_key_requests = true;
  server.Send(1, server.StartWalks(1, {{8, 6}}));
  server.Pump();
  EXPECT_TRUE(server.results.empty());
  EXPECT_EQ(server[1].role.held_walks(), 1u);
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  EXPECT_EQ(server.results[0].header.outcome, WalkOutcome::kDropped);
  EXPECT_EQ(server.results[0].header.hops, 0);
  EXPECT_EQ(server.results[0].ids, (std::vector<uint32_t>{2}));
  EXPECT_EQ(server.ReportsOf(kWalkRoundReport).size(), 3u);
  EXPECT_EQ(server[1].role.held_walks(), 0u);
}

// ---- What the devices account -------------------------------------------------------------

TEST(FedWalkWalkRoleTest, DevicesAccountTheirOwnEncoderCostAndEveryLaterHopPerEdge) {
  // Rows that overlap: vertex v encodes as v or as 0, with P(0) = 3/4 for
  // odd v and 1/2 for even v. Every device of the path 1 - 2 - 3 holds an
  // odd and an even row, so it measures epsilon = log((3/4)/(1/2)) and
  // delta = 1/2 (an even row puts 1/2 on v itself, which no other row
  // draws), more than the 0.25 the server claims.
  WalkWorld world = PathWorld();
  for (uint32_t v = 1; v < world.n; ++v) {
    world.codebook[2 * v] = CodebookEntry{v, v % 2 == 1 ? kQ31One / 2 : kQ31One, 1};
    world.codebook[2 * v + 1] = CodebookEntry{0, kQ31One, 1};
  }
  Server server(world, {1, 2, 3});
  const uint16_t l = 5;
  RunKeysRound(server, Params(l, 0.0));
  for (uint32_t v : {1u, 2u, 3u}) {
    const ReleaseCost& c = server[v].role.encoding_cost();
    EXPECT_NEAR(c.epsilon, std::log(1.5), 1e-12) << v;
    EXPECT_NEAR(c.delta, 0.5, 1e-12) << v;
    EXPECT_FALSE(c.unbounded);
    EXPECT_TRUE(c.unbounded_against_server);
  }
  server.Send(1, server.StartWalks(1, {{3, l}}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 1u);
  ASSERT_EQ(server.results[0].header.outcome, WalkOutcome::kComplete);
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  // One encoding per hop; per edge, each step counts itself and every
  // encoding after it: 5 + 4 + 3 + 2 + 1 encodings' worth.
  const double eps = std::log(1.5);
  double epsilon = 0.0, edge = 0.0, delta = 0.0;
  for (const auto& rep : server.ReportsOf(kWalkRoundReport)) {
    Device& d = server[rep.device];
    EXPECT_DOUBLE_EQ(rep.body.epsilon, d.ledger.phase_epsilon(kPhaseWalks));
    EXPECT_DOUBLE_EQ(rep.body.edge_epsilon, d.ledger.phase_edge_epsilon(kPhaseWalks));
    EXPECT_DOUBLE_EQ(rep.body.delta, d.ledger.phase_delta(kPhaseWalks));
    EXPECT_GE(rep.body.edge_epsilon, rep.body.epsilon);
    EXPECT_EQ(rep.body.unbounded_against_server, rep.body.releases > 0);
    EXPECT_FALSE(rep.body.unbounded);
    epsilon += rep.body.epsilon;
    edge += rep.body.edge_epsilon;
    delta += rep.body.delta;
  }
  EXPECT_NEAR(epsilon, l * eps, 1e-9);
  EXPECT_NEAR(edge, (5 + 4 + 3 + 2 + 1) * eps, 1e-9);
  EXPECT_NEAR(delta, l * 0.5, 1e-9);
}

TEST(FedWalkWalkRoleTest, ABudgetThatIsSpentDropsTheWalksItWouldPayFor) {
  const WalkWorld world = PathWorld();
  Server server(world, {1, 2, 3});
  // The server's claim 0.25 per encoding; device 2 allows a job epsilon of
  // 1.5 and unbounded releases (identity rows). A walk of length 5 from 1
  // visits 2 twice: per edge (1 + 3) x 0.25, then (1 + 1) x 0.25, which
  // is all of it; the second walk's first visit no longer fits.
  PrivacyBudget small = PrivacyBudget::Unlimited();
  small.job_epsilon = 1.5;
  server[2].ledger.set_budget(small);
  RunKeysRound(server, Params(5, 0.0));
  server.Send(1, server.StartWalks(1, {{1, 5}, {2, 5}}));
  server.Pump();
  ASSERT_EQ(server.results.size(), 2u);
  int dropped = 0;
  for (const auto& r : server.results) dropped += r.header.outcome == WalkOutcome::kDropped ? 1 : 0;
  EXPECT_EQ(dropped, 1);
  EXPECT_DOUBLE_EQ(server[2].ledger.job_epsilon(), 1.5);
}

// ---- No (key, nonce) pair twice, whatever the server does ------------------------------------
//
// Every sealed walk message carries the id of the key it was sealed under
// and its counter (the GCM nonce) in clear (seal.h), so the relay's capture
// says exactly which (key, nonce) pairs were used, without any key.

struct NonceUse {
  uint8_t key_id[seal::kSealKeyIdBytes];
  uint64_t counter;
  bool operator<(const NonceUse& o) const {
    const int c = std::memcmp(key_id, o.key_id, sizeof(key_id));
    return c != 0 ? c < 0 : counter < o.counter;
  }
};

// Adds every captured message's (key id, counter) to `used`; fails on a repeat.
void ExpectNoNonceReuse(const Server& server, std::set<NonceUse>* used, size_t* messages) {
  for (const auto& c : server.captured) {
    NonceUse u{};
    ASSERT_TRUE(seal::PeekSealed(c.sealed, u.key_id, &u.counter));
    EXPECT_TRUE(used->insert(u).second) << "(key, nonce) reused: " << c.src << " -> " << c.dst << " counter "
                                        << u.counter;
    ++*messages;
  }
}

// Walks from every device of a ring, to completion.
void RunRingWalks(Server& server, const std::vector<uint32_t>& ids, uint16_t l, uint32_t first_walk) {
  for (uint32_t v : ids) server.Send(v, server.StartWalks(v, {{first_walk + v, l}}));
  server.Pump();
}

TEST(FedWalkWalkRoleTest, NoNonceRepeatsWhenTheJobIsRunAgainWithTheSameIdAndSalt) {
  // A rerun with the same experiment seed: a restarted server numbers jobs
  // from 1 again and (before salts came from the OS) drew the same salt.
  // Here the devices start afresh too, as after a fleet restart.
  const WalkWorld world = WalkWorld::Make(6, 2, 2, 5);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < world.n; ++v) ids.push_back(v);
  std::set<NonceUse> used;
  size_t messages = 0;
  std::vector<std::vector<uint8_t>> announced;
  for (int run = 0; run < 2; ++run) {
    Server server(world, ids);
    RunKeysRound(server, Params(8, 0.3));  // identical parameters, salt included
    RunRingWalks(server, ids, 8, 10);
    ASSERT_EQ(server.results.size(), ids.size());
    ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server, &used, &messages));
    announced.push_back(server.job_keys.at(0));
  }
  EXPECT_GT(messages, 2 * ids.size());
  EXPECT_NE(announced[0], announced[1]) << "a device announced the same job key in both runs";
}

// A server that started the FedWalk plan over (after its restart) runs the
// HCT job again: the device drops the walk job it was in and binds the new
// results. Binding is refused during a job; after Abandon the old job's
// records are refused and the role binds and walks again.
TEST(FedWalkWalkRoleTest, AnAbandonedJobIsDroppedAndTheRoleBindsAgain) {
  const WalkWorld world = WalkWorld::Make(6, 2, 2, 11);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < world.n; ++v) ids.push_back(v);
  Server server(world, ids);
  RunKeysRound(server, Params(8, 0.3));
  FedWalkWalkRole& role = server[0].role;
  ASSERT_EQ(role.round(), kWalkRoundWalks);
  WalkInputs in;
  in.neighbours = world.neighbours[0];
  in.codebook_pool = world.codebook;
  in.own_row = world.Row(0);
  in.tree = world.tree;
  in.bin_plan = world.plan;
  in.bins = world.bins;
  in.vertex_count = world.n;
  EXPECT_EQ(role.Init(in).code(), StatusCode::kFailedPrecondition);  // not during a job
  role.Abandon();
  EXPECT_EQ(role.round(), 0u);
  EXPECT_FALSE(role.finished());
  ASSERT_TRUE(role.Init(in).ok());
  EXPECT_TRUE(role.tree_indexed());
  // The abandoned job's walk starts are refused, not walked.
  const uint32_t rejected_before = role.stats().rejected;
  server.Send(0, server.StartWalks(0, {{500, 8}}));
  server.Pump();
  EXPECT_EQ(role.stats().rejected, rejected_before + 1);
  EXPECT_EQ(role.stats().started, 0u);
  // The other devices go on with it; walks that reach device 0 end there
  // unwalked (the server counts them lost).
  RunRingWalks(server, {1, 2, 3}, 8, 600);
  EXPECT_LE(server.results.size(), 3u);
  EXPECT_EQ(role.stats().forwarded, 0u);
  EXPECT_EQ(role.stats().finished, 0u);
  EXPECT_EQ(role.stats().received, 0u);
}

TEST(FedWalkWalkRoleTest, NoNonceRepeatsWhenADeviceRestartsMidJob) {
  const WalkWorld world = WalkWorld::Make(6, 2, 2, 7);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < world.n; ++v) ids.push_back(v);
  Server server(world, ids);
  const std::vector<uint8_t> params = Encoded(Params(8, 0.3));
  RunKeysRound(server, Params(8, 0.3));
  RunRingWalks(server, ids, 8, 10);
  const std::vector<uint8_t> before = server.job_keys.at(2);
  // Device 2's app restarts in round 2: a new process, counters from 1.
  server.Restart(2);
  server.Send(2, server.JobStart(2, kWalkRoundKeys, params));
  server.Send(2, server.JobStart(2, kWalkRoundWalks, {}));
  server.Pump();
  EXPECT_EQ(server.job_key_announcements[2], 2u);
  EXPECT_NE(server.job_keys.at(2), before);
  // Walks from and to the restarted device: its peers still hold its old
  // key, so some walks die on the way; none may reuse a nonce.
  RunRingWalks(server, ids, 8, 100);
  std::set<NonceUse> used;
  size_t messages = 0;
  ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server, &used, &messages));
  EXPECT_GT(messages, ids.size());
  // The restarted device sealed counter 1 twice: once in each life, under
  // different keys.
  size_t twos_first = 0;
  for (const auto& c : server.captured) {
    NonceUse u{};
    ASSERT_TRUE(seal::PeekSealed(c.sealed, u.key_id, &u.counter));
    if (c.src == 2 && u.counter == 1) ++twos_first;
  }
  EXPECT_EQ(twos_first, 2u);
}

TEST(FedWalkWalkRoleTest, NoNonceRepeatsWhenTheServerReplaysJobStart) {
  const WalkWorld world = WalkWorld::Make(6, 2, 2, 9);
  std::vector<uint32_t> ids;
  for (uint32_t v = 0; v < world.n; ++v) ids.push_back(v);
  Server server(world, ids);
  const WalkParameters p = Params(8, 0.3);
  RunKeysRound(server, p);
  RunRingWalks(server, ids, 8, 10);
  // The same JobStart again while the job runs: the device keeps its key
  // and its counter (a round-1 JobStart in round 2 is refused outright).
  EXPECT_EQ(server.Feed(server[1], server.JobStart(1, kWalkRoundKeys, Encoded(p))), Status::FailedPrecondition());
  server.Reconnect(1);
  // Finish the job, run another, then replay the first job's JobStart
  // (same id, same salt): a new job for the devices, with new keys.
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  server.job = kJob + 1;
  RunKeysRound(server, p);
  RunRingWalks(server, ids, 8, 200);
  server.SendAll(kWalkRoundReport, {});
  server.Pump();
  server.job = kJob;
  RunKeysRound(server, p);
  RunRingWalks(server, ids, 8, 300);
  std::set<NonceUse> used;
  size_t messages = 0;
  ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server, &used, &messages));
  EXPECT_GT(messages, 3 * ids.size());
  EXPECT_EQ(server.job_key_announcements[1], 3u);  // one key per start, none for the refused replay
}

// ---- The key cache on its own --------------------------------------------------------------

TEST(PeerKeyTableTest, EvictsTheLeastRecentlyUsedUnpinnedRecord) {
  tls::TlsCredentials none;
  roles::PeerKeyTable table(none, &crypto::DrbgRandom, nullptr);
  std::vector<roles::KeyedPeer> neighbours(2), cache(2);
  neighbours[0].id = 3;
  neighbours[1].id = 8;
  ASSERT_TRUE(table.Bind(5, neighbours, cache).ok());
  seal::JobKeyPair own_key;  // never valid: nothing here derives keys
  table.StartJob(own_key, /*directory=*/false, [](size_t) { return false; });
  EXPECT_EQ(table.FindOrAdd(3), &neighbours[0]);  // neighbours are not cached
  EXPECT_EQ(table.FindOrAdd(5), nullptr);          // never itself
  roles::KeyedPeer* a = table.FindOrAdd(10);
  roles::KeyedPeer* b = table.FindOrAdd(11);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(table.FindOrAdd(10), a);
  table.Touch(a);  // 11 is now the least recently used
  roles::KeyedPeer* c = table.FindOrAdd(12);
  EXPECT_EQ(c, b);
  EXPECT_EQ(c->id, 12u);
  EXPECT_EQ(table.Find(11), nullptr);
  EXPECT_EQ(table.evictions(), 1u);
  // Pinned records stay: a waiting walk, a request in flight.
  a->waiting = 1;
  table.Want(c);
  nodefl_wire_PeerKeyRequest request = nodefl_wire_PeerKeyRequest_init_zero;
  EXPECT_EQ(table.FillRequest(&request, 64), 1u);
  EXPECT_EQ(request.device_ids[0], 12u);
  EXPECT_EQ(c->state, roles::PeerKeyState::kRequested);
  EXPECT_EQ(table.FindOrAdd(13), nullptr);
  // After a reconnect the request is due again.
  table.OnRestart();
  EXPECT_EQ(c->state, roles::PeerKeyState::kWanted);
  EXPECT_TRUE(table.has_wanted());
  // Unsolicited or unknown answers are ignored.
  nodefl_wire_PeerCertificate cert = nodefl_wire_PeerCertificate_init_zero;
  cert.device_id = 10;
  EXPECT_EQ(table.OnCertificate(cert), nullptr);
  // Binding refuses unsorted neighbours or the device itself.
  std::vector<roles::KeyedPeer> bad(2);
  bad[0].id = 8;
  bad[1].id = 3;
  EXPECT_EQ(table.Bind(5, bad, cache), Status::InvalidArgument());
  bad[0].id = 5;
  bad[1].id = 6;
  EXPECT_EQ(table.Bind(5, bad, cache), Status::InvalidArgument());
}

TEST(FedWalkWalkRoleTest, MemoryFootprint) {
  // What the role costs per neighbour / per slot, as documented.
  EXPECT_LE(sizeof(roles::KeyedPeer), 208u);
  EXPECT_LE(sizeof(WalkSlot), 24u);
  EXPECT_EQ(WalkSlotBytes(40), 204u);
  // About half of it is the peer directory's one entry (a PeerCertificate).
  EXPECT_LT(sizeof(FedWalkWalkRole), 2600u);
}

}  // namespace
}  // namespace nodefl::fedwalk
