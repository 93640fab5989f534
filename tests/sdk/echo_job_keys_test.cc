// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// No (key, nonce) pair is ever used twice by the neighbour-echo role,
// whatever the server does: it runs the same job (id and salt) again on a
// restarted fleet, a device restarts in the middle of the job, or the
// server replays JobStart. Real DeviceSessions run the role behind a small
// scripted server that hands out certificates with the peers' announced
// job keys and moves every RelaySend to its destination. Every sealed
// payload names its key (key id) and nonce (counter) in clear (seal.h), so
// the relay's capture is checked without holding any key.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/echo/neighbour_echo.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/protocol/peer_directory.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/seal.h"
#include "session_frames.h"
#include "test_devices.h"
#include "test_pki.h"

namespace nodefl::echo {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using ::nodefl::testing::TestIdentity;
using ::nodefl::testing::TestPki;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;

// One certificate and key per device id for the whole test program, as a
// real device keeps its credentials across restarts and reruns.
::nodefl::testing::LastingIdentities& Identities() {
  static auto* identities = new ::nodefl::testing::LastingIdentities(47);
  return *identities;
}
TestPki& Pki() { return Identities().pki(); }
const TestIdentity& IdentityOf(uint32_t id) { return Identities().Of(id); }

// A 5-cycle with one chord.
const std::map<uint32_t, std::vector<uint32_t>>& Graph() {
  static const std::map<uint32_t, std::vector<uint32_t>> g = {
      {0, {1, 2, 4}}, {1, {0, 2}}, {2, {0, 1, 3}}, {3, {2, 4}}, {4, {0, 3}}};
  return g;
}

class Device {
 public:
  explicit Device(uint32_t id)
      : id_(id),
        peers_(Graph().at(id).size()),
        role_(id, Span<EchoPeer>(peers_), credentials_, &crypto::DrbgRandom, &rng_),
        frame_(kMaxFrame),
        output_(4 * kMaxFrame),
        session(Options(id), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(Pki().Load(IdentityOf(id), &credentials_).ok());
    // Keys need randomness that never repeats (entropy on a real device):
    // each Device object gets a stream of its own.
    static uint64_t instances = 0;
    EXPECT_TRUE(rng_.SeedDeterministic(71, (uint64_t{id} << 32) | ++instances).ok());
    for (size_t i = 0; i < peers_.size(); ++i) peers_[i].id = Graph().at(id)[i];
    EXPECT_TRUE(role_.Init().ok());
    EXPECT_TRUE(session.AddRole(role_).ok());
  }
  uint32_t id() const { return id_; }
  const NeighbourEchoRole& role() const { return role_; }

 private:
  static SessionOptions Options(uint32_t id) {
    SessionOptions o;
    o.device_id = id;
    return o;
  }
  uint32_t id_;
  tls::TlsCredentials credentials_;
  Drbg rng_;
  std::vector<EchoPeer> peers_;
  NeighbourEchoRole role_;
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
};

class Server {
 public:
  Server() {
    for (const auto& [id, unused] : Graph()) Restart(id);
  }

  // A new process for device `id`: fresh state, registered afresh.
  void Restart(uint32_t id) {
    inbox_[id].clear();
    devices_[id] = std::make_unique<Device>(id);
    Device& d = *devices_[id];
    ASSERT_TRUE(d.session.Start(now_).ok());
    d.session.ConsumeOutput(d.session.PendingOutput().size());  // Hello
    seq_[id] = 0;
    auto w = Envelope(nodefl_wire_Envelope_welcome_tag, 0, 0);
    w.body.welcome.resume_token.size = 32;
    ASSERT_TRUE(Feed(d, Frame(id, w)).ok());
  }

  Device& operator[](uint32_t id) { return *devices_.at(id); }

  std::vector<uint8_t> JobStart(uint32_t to, uint64_t job, uint32_t round, const std::vector<uint8_t>& salt) {
    auto e = Envelope(nodefl_wire_Envelope_job_start_tag, job, round);
    e.body.job_start.kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;
    e.body.job_start.peer_directory = round == 1 && directory;
    if (round == 1) {
      std::memcpy(e.body.job_start.parameters.bytes, salt.data(), salt.size());
      e.body.job_start.parameters.size = static_cast<pb_size_t>(salt.size());
    }
    return Frame(to, e);
  }
  void SendAll(uint64_t job, uint32_t round, const std::vector<uint8_t>& salt) {
    for (auto& [id, d] : devices_) inbox_[id].push_back(JobStart(id, job, round, salt));
  }
  // A job's two rounds on every device, the same salt every time.
  void RunJob(uint64_t job) {
    announced_.clear();
    SendAll(job, 1, Salt());
    Pump();
    SendAll(job, 2, Salt());
    Pump();
  }
  static std::vector<uint8_t> Salt() { return std::vector<uint8_t>(kEchoJobSaltBytes, 0x5A); }

  Status Feed(Device& d, const std::vector<uint8_t>& frame) {
    size_t pos = 0;
    while (pos < frame.size()) {
      size_t consumed = 0;
      const Status s = d.session.OnReceived(ConstByteSpan(frame).subspan(pos), now_, &consumed);
      if (!s.ok()) return s;
      pos += consumed;
      Collect(d);
    }
    return Status::Ok();
  }

  void Pump() {
    for (int round = 0; round < 100; ++round) {
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
        EXPECT_TRUE(d->session.Poll(now_).ok());
        if (!d->session.PendingOutput().empty()) moved = true;
        Collect(*d);
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "no quiescence";
  }

  // Round 1 with a peer directory: every device's certificate and job key
  // (those in `listed`, if not empty) as one artefact to every device.
  void SendDirectory(uint64_t job, const std::set<uint32_t>& listed = {}) {
    std::vector<uint8_t> bytes(4);
    uint32_t count = 0;
    std::vector<uint8_t> entry(protocol::kMaxPeerDirectoryEntryBytes);
    for (const auto& [id, key] : announced_) {
      if (!listed.empty() && listed.count(id) == 0) continue;
      size_t n = 0;
      EXPECT_TRUE(protocol::EncodePeerDirectoryEntry(id, IdentityOf(id).certificate_der, key, entry, &n).ok());
      bytes.insert(bytes.end(), entry.begin(), entry.begin() + static_cast<std::ptrdiff_t>(n));
      ++count;
    }
    StoreU32Le(count, bytes.data());
    for (auto& [id, d] : devices_) {
      protocol::ChunkSender sender(bytes, ++transfer_ids_, protocol::kPeerDirectoryArtefact, 500);
      auto h = Envelope(nodefl_wire_Envelope_chunk_header_tag, job, 1);
      EXPECT_TRUE(sender.MakeHeader(&h.body.chunk_header).ok());
      inbox_[id].push_back(Frame(id, h));
      auto c = Envelope(nodefl_wire_Envelope_chunk_tag, job, 1);
      while (sender.NextChunk(&c.body.chunk).value_or(false)) inbox_[id].push_back(Frame(id, c));
    }
  }

  bool directory = false;
  uint32_t key_requests = 0;
  struct Captured {
    uint32_t src, dst;
    std::vector<uint8_t> sealed;
  };
  std::vector<Captured> captured;
  std::map<uint32_t, uint32_t> announcements;
  std::map<uint32_t, std::vector<uint8_t>> last_key;

 private:
  static nodefl_wire_Envelope Envelope(pb_size_t tag, uint64_t job, uint32_t round) {
    return ::nodefl::testing::AddressedEnvelope(tag, job, round);
  }
  std::vector<uint8_t> Frame(uint32_t to, const nodefl_wire_Envelope& e) {
    return ::nodefl::testing::FrameTo(e, ++seq_[to]);
  }

  void Collect(Device& d) {
    ::nodefl::testing::DrainSessionOutput(d.session, [&](const nodefl_wire_Envelope& e) { Handle(d.id(), e); });
  }

  void Handle(uint32_t from, const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_job_key_tag: {
        const auto& k = e.body.job_key.public_key;
        announced_[from] = std::vector<uint8_t>(k.bytes, k.bytes + k.size);
        last_key[from] = announced_[from];
        ++announcements[from];
        AnswerWaiting();
        break;
      }
      case nodefl_wire_Envelope_peer_key_request_tag:
        ++key_requests;
        for (pb_size_t i = 0; i < e.body.peer_key_request.device_ids_count; ++i) {
          waiting_.push_back({from, e.body.peer_key_request.device_ids[i], e.job_id, e.round});
        }
        AnswerWaiting();
        break;
      case nodefl_wire_Envelope_relay_send_tag: {
        const auto& r = e.body.relay_send;
        std::vector<uint8_t> sealed(r.sealed.bytes, r.sealed.bytes + r.sealed.size);
        captured.push_back({from, r.dst, sealed});
        auto d = Envelope(nodefl_wire_Envelope_relay_deliver_tag, e.job_id, e.round);
        d.body.relay_deliver.src = from;
        d.body.relay_deliver.relay_id = ++relay_ids_[r.dst];
        std::memcpy(d.body.relay_deliver.sealed.bytes, sealed.data(), sealed.size());
        d.body.relay_deliver.sealed.size = static_cast<pb_size_t>(sealed.size());
        inbox_[r.dst].push_back(Frame(r.dst, d));
        break;
      }
      default:
        break;
    }
  }

  // The server's rule: a certificate goes out with the peer's job key
  // once the peer has announced one for this job.
  void AnswerWaiting() {
    std::vector<Request> still;
    for (const Request& r : waiting_) {
      if (announced_.count(r.id) == 0) {
        still.push_back(r);
        continue;
      }
      auto c = Envelope(nodefl_wire_Envelope_peer_certificate_tag, r.job, r.round);
      c.body.peer_certificate.device_id = r.id;
      c.body.peer_certificate.found = true;
      const std::vector<uint8_t>& der = IdentityOf(r.id).certificate_der;
      std::memcpy(c.body.peer_certificate.certificate_der.bytes, der.data(), der.size());
      c.body.peer_certificate.certificate_der.size = static_cast<pb_size_t>(der.size());
      const std::vector<uint8_t>& key = announced_.at(r.id);
      std::memcpy(c.body.peer_certificate.job_key.bytes, key.data(), key.size());
      c.body.peer_certificate.job_key.size = static_cast<pb_size_t>(key.size());
      inbox_[r.from].push_back(Frame(r.from, c));
    }
    waiting_.swap(still);
  }

  struct Request {
    uint32_t from, id;
    uint64_t job;
    uint32_t round;
  };
  uint64_t now_ = 1'000;
  uint64_t transfer_ids_ = 0;
  std::vector<Request> waiting_;
  std::map<uint32_t, std::vector<uint8_t>> announced_;  // for the job running now
  std::map<uint32_t, std::unique_ptr<Device>> devices_;
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> inbox_;
  std::map<uint32_t, uint64_t> seq_;
  std::map<uint32_t, uint64_t> relay_ids_;
};

struct NonceUse {
  uint8_t key_id[seal::kSealKeyIdBytes];
  uint64_t counter;
  bool operator<(const NonceUse& o) const {
    const int c = std::memcmp(key_id, o.key_id, sizeof(key_id));
    return c != 0 ? c < 0 : counter < o.counter;
  }
};

void ExpectNoNonceReuse(const std::vector<Server::Captured>& captured, std::set<NonceUse>* used) {
  for (const auto& c : captured) {
    NonceUse u{};
    ASSERT_TRUE(seal::PeekSealed(c.sealed, u.key_id, &u.counter));
    EXPECT_TRUE(used->insert(u).second) << "(key, nonce) reused: " << c.src << " -> " << c.dst << " counter "
                                        << u.counter;
  }
}

constexpr uint32_t kEdges = 6;

uint32_t Received(Server& server) {
  uint32_t n = 0;
  for (const auto& [id, unused] : Graph()) n += server[id].role().stats().received;
  return n;
}

TEST(EchoJobKeysTest, NoNonceRepeatsWhenTheSameJobRunsAgainOnARestartedFleet) {
  std::set<NonceUse> used;
  std::vector<std::vector<uint8_t>> keys_of_zero;
  for (int run = 0; run < 2; ++run) {
    Server server;
    server.RunJob(1);  // same job id, same salt
    EXPECT_EQ(Received(server), 2 * kEdges) << "run " << run;
    EXPECT_EQ(server.captured.size(), 2 * kEdges);
    ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server.captured, &used));
    keys_of_zero.push_back(server.last_key.at(0));
  }
  EXPECT_NE(keys_of_zero[0], keys_of_zero[1]);
}

TEST(EchoJobKeysTest, NoNonceRepeatsWhenADeviceRestartsMidJob) {
  Server server;
  server.RunJob(1);
  ASSERT_EQ(Received(server), 2 * kEdges);
  // Device 2 restarts after it sent; the server sends it the job again
  // (and, for good measure, repeats both rounds to everyone).
  server.Restart(2);
  server.SendAll(1, 1, Server::Salt());
  server.Pump();
  server.SendAll(1, 2, Server::Salt());
  server.Pump();
  EXPECT_EQ(server.announcements[2], 2u);
  EXPECT_EQ(server.announcements[0], 1u) << "a repeated JobStart made a device draw a new key";
  // Device 2 sealed to each neighbour again, counters from 1, new keys.
  size_t from_two = 0;
  for (const auto& c : server.captured) from_two += c.src == 2 ? 1 : 0;
  EXPECT_EQ(from_two, 2 * Graph().at(2).size());
  std::set<NonceUse> used;
  ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server.captured, &used));
}

TEST(EchoJobKeysTest, NoNonceRepeatsWhenTheServerReplaysJobStart) {
  Server server;
  server.RunJob(1);
  // Round 1 replayed after round 2 (the old code reset its counters here).
  server.SendAll(1, 1, Server::Salt());
  server.Pump();
  server.SendAll(1, 2, Server::Salt());
  server.Pump();
  // Another job, then the first job's JobStart again (same id, same salt).
  server.RunJob(2);
  server.RunJob(1);
  std::set<NonceUse> used;
  ASSERT_NO_FATAL_FAILURE(ExpectNoNonceReuse(server.captured, &used));
  EXPECT_EQ(server.captured.size(), 3 * 2 * kEdges);  // nothing re-sent for the replayed rounds
  for (const auto& [id, n] : server.announcements) EXPECT_EQ(n, 3u) << "device " << id;
}

TEST(EchoJobKeysTest, WithAPeerDirectoryNoDeviceNamesItsNeighbours) {
  Server server;
  server.directory = true;
  server.SendAll(1, 1, Server::Salt());
  server.Pump();
  EXPECT_EQ(server.announcements.size(), Graph().size());  // every device announced its key
  server.SendDirectory(1);
  server.Pump();
  server.SendAll(1, 2, Server::Salt());
  server.Pump();
  EXPECT_EQ(server.key_requests, 0u);
  EXPECT_EQ(Received(server), 2 * kEdges);
  for (const auto& [id, unused] : Graph()) EXPECT_EQ(server[id].role().stats().key_failures, 0u) << id;
}

TEST(EchoJobKeysTest, NeighboursMissingFromTheDirectoryFailToKey) {
  Server server;
  server.directory = true;
  server.SendAll(1, 1, Server::Salt());
  server.Pump();
  server.SendDirectory(1, {0, 1, 2, 3});  // 4 is not listed
  server.Pump();
  server.SendAll(1, 2, Server::Salt());
  server.Pump();
  EXPECT_EQ(server.key_requests, 0u);
  // 0 and 3, 4's neighbours, fail to key it; everyone else keys everyone.
  EXPECT_EQ(server[0].role().stats().key_failures, 1u);
  EXPECT_EQ(server[3].role().stats().key_failures, 1u);
  EXPECT_EQ(server[1].role().stats().key_failures, 0u);
  // Messages flow on the other edges (4 itself keys its listed neighbours,
  // which cannot open what it sends).
  EXPECT_EQ(Received(server), 2 * kEdges - 4);
}

}  // namespace
}  // namespace nodefl::echo
