// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's side of an in-memory conversation with a DeviceSession, for
// the SDK tests that drive a session or a role without TLS: it encodes the
// server's envelopes with the real wire codec (sequence numbers as a server
// numbers them) and decodes what the device wrote. One copy, shared by the
// session and role tests, so that they all speak the protocol the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::testing {

class ScriptedServer {
 public:
  // What differs between the tests that use it; the defaults are a role
  // test's server: no heartbeats, no idle timeout.
  struct Options {
    uint32_t job_kind = nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO;  // of JobStart()
    uint8_t resume_token_fill = 0x5A;  // every byte of the Welcome's token
    uint32_t heartbeat_ms = 0;
    uint32_t idle_ms = 0;
    uint64_t first_transfer_id = 100;  // the first artefact's is one more
  };
  // Header and chunks of an artefact, unencoded, so tests can tamper with them.
  struct Transfer {
    nodefl_wire_ChunkHeader header;
    std::vector<nodefl_wire_Chunk> chunks;
  };

  ScriptedServer() : ScriptedServer(Options{}) {}
  explicit ScriptedServer(const Options& options) : options_(options), transfer_id_(options.first_transfer_id) {}

  // `env` as a frame of the current version; numbered here unless the test
  // set a sequence number itself (to test out-of-order numbering).
  std::vector<uint8_t> Frame(nodefl_wire_Envelope env);
  std::vector<uint8_t> Welcome(bool resumed = false);
  // A JobStart of Options::job_kind.
  std::vector<uint8_t> JobStart(uint64_t job, uint32_t round = 1, const std::vector<uint8_t>& parameters = {},
                                uint32_t deadline_ms = 0);
  // A round-1 JobStart of any kind, even one the wire enum does not name.
  std::vector<uint8_t> JobStartOfKind(uint64_t job, uint32_t kind);
  // A sealed relay message of 4 bytes from device 3.
  std::vector<uint8_t> Deliver(uint64_t job, uint64_t relay_id);

  // Artefact kinds are each job's own enum, hence the templates.
  template <typename Kind>
  Transfer Cut(Kind kind, const std::vector<uint8_t>& bytes, size_t chunk_bytes) {
    return CutKind(static_cast<uint32_t>(kind), bytes, chunk_bytes);
  }
  template <typename Kind>
  std::vector<std::vector<uint8_t>> Artefact(uint64_t job, uint32_t round, Kind kind, const std::vector<uint8_t>& bytes,
                                             size_t chunk_bytes) {
    return ArtefactOfKind(job, round, static_cast<uint32_t>(kind), bytes, chunk_bytes);
  }
  std::vector<uint8_t> Header(uint64_t job, uint32_t round, const nodefl_wire_ChunkHeader& h);
  std::vector<uint8_t> Chunk(uint64_t job, uint32_t round, const nodefl_wire_Chunk& c);

  // A new connection: the server numbers its frames from 1 again.
  void Restart() { next_seq_ = 1; }

  // Decodes every frame the device wrote and consumes them; with
  // `expect_whole_frames`, also expects no partial frame left over.
  static std::vector<nodefl_wire_Envelope> Read(device::DeviceSession& session, bool expect_whole_frames = true);

 private:
  Transfer CutKind(uint32_t kind, const std::vector<uint8_t>& bytes, size_t chunk_bytes);
  std::vector<std::vector<uint8_t>> ArtefactOfKind(uint64_t job, uint32_t round, uint32_t kind,
                                                   const std::vector<uint8_t>& bytes, size_t chunk_bytes);

  Options options_;
  uint64_t next_seq_ = 1;
  uint64_t transfer_id_;
};

}  // namespace nodefl::testing
