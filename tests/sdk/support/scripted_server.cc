// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "scripted_server.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/limits.h"
#include "session_frames.h"

namespace nodefl::testing {

std::vector<uint8_t> ScriptedServer::Frame(nodefl_wire_Envelope env) {
  const uint64_t seq = env.seq == 0 ? next_seq_++ : env.seq;
  return FrameTo(env, seq);
}

std::vector<uint8_t> ScriptedServer::Welcome(bool resumed) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_welcome_tag;
  e.body.welcome.resume_token.size = 32;
  std::memset(e.body.welcome.resume_token.bytes, options_.resume_token_fill, 32);
  e.body.welcome.heartbeat_interval_ms = options_.heartbeat_ms;
  e.body.welcome.idle_timeout_ms = options_.idle_ms;
  e.body.welcome.resumed = resumed;
  return Frame(e);
}

std::vector<uint8_t> ScriptedServer::JobStart(uint64_t job, uint32_t round, const std::vector<uint8_t>& parameters,
                                              uint32_t deadline_ms) {
  nodefl_wire_Envelope e = AddressedEnvelope(nodefl_wire_Envelope_job_start_tag, job, round);
  // Copied as bytes: the kind may be one the enum does not name.
  std::memcpy(&e.body.job_start.kind, &options_.job_kind, sizeof(options_.job_kind));
  e.body.job_start.deadline_ms = deadline_ms;
  EXPECT_LE(parameters.size(), sizeof(e.body.job_start.parameters.bytes));
  if (!parameters.empty()) std::memcpy(e.body.job_start.parameters.bytes, parameters.data(), parameters.size());
  e.body.job_start.parameters.size = static_cast<pb_size_t>(parameters.size());
  return Frame(e);
}

std::vector<uint8_t> ScriptedServer::JobStartOfKind(uint64_t job, uint32_t kind) {
  const uint32_t usual = options_.job_kind;
  options_.job_kind = kind;
  std::vector<uint8_t> frame = JobStart(job);
  options_.job_kind = usual;
  return frame;
}

std::vector<uint8_t> ScriptedServer::Deliver(uint64_t job, uint64_t relay_id) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_relay_deliver_tag;
  e.job_id = job;
  e.body.relay_deliver.src = 3;
  e.body.relay_deliver.relay_id = relay_id;
  e.body.relay_deliver.sealed.size = 4;
  return Frame(e);
}

ScriptedServer::Transfer ScriptedServer::CutKind(uint32_t kind, const std::vector<uint8_t>& bytes,
                                                 size_t chunk_bytes) {
  Transfer t;
  protocol::ChunkSender sender(bytes, ++transfer_id_, kind, chunk_bytes);
  EXPECT_TRUE(sender.MakeHeader(&t.header).ok());
  auto chunk = std::make_unique<nodefl_wire_Chunk>();
  for (;;) {
    Result<bool> more = sender.NextChunk(chunk.get());
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    t.chunks.push_back(*chunk);
  }
  return t;
}

std::vector<uint8_t> ScriptedServer::Header(uint64_t job, uint32_t round, const nodefl_wire_ChunkHeader& h) {
  nodefl_wire_Envelope e = AddressedEnvelope(nodefl_wire_Envelope_chunk_header_tag, job, round);
  e.body.chunk_header = h;
  return Frame(e);
}

std::vector<uint8_t> ScriptedServer::Chunk(uint64_t job, uint32_t round, const nodefl_wire_Chunk& c) {
  nodefl_wire_Envelope e = AddressedEnvelope(nodefl_wire_Envelope_chunk_tag, job, round);
  e.body.chunk = c;
  return Frame(e);
}

std::vector<std::vector<uint8_t>> ScriptedServer::ArtefactOfKind(uint64_t job, uint32_t round, uint32_t kind,
                                                                 const std::vector<uint8_t>& bytes,
                                                                 size_t chunk_bytes) {
  const Transfer t = CutKind(kind, bytes, chunk_bytes);
  std::vector<std::vector<uint8_t>> frames = {Header(job, round, t.header)};
  for (const auto& c : t.chunks) frames.push_back(Chunk(job, round, c));
  return frames;
}

std::vector<nodefl_wire_Envelope> ScriptedServer::Read(device::DeviceSession& session, bool expect_whole_frames) {
  std::vector<nodefl_wire_Envelope> out;
  const ConstByteSpan bytes = session.PendingOutput();
  size_t pos = 0;
  auto e = std::make_unique<nodefl_wire_Envelope>();  // large: kept off the stack
  while (pos + protocol::kFrameHeaderBytes <= bytes.size()) {
    const size_t len = (size_t{bytes[pos]} << 24) | (size_t{bytes[pos + 1]} << 16) | (size_t{bytes[pos + 2]} << 8) |
                       bytes[pos + 3];
    EXPECT_TRUE(protocol::DecodeEnvelope(bytes.subspan(pos + protocol::kFrameHeaderBytes, len), e.get()).ok());
    out.push_back(*e);
    pos += protocol::kFrameHeaderBytes + len;
  }
  if (expect_whole_frames) {
    EXPECT_EQ(pos, bytes.size());
  }
  session.ConsumeOutput(bytes.size());
  return out;
}

}  // namespace nodefl::testing
