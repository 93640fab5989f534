// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ChunkReceiver (protocol/chunk.h) driven by a script of headers, chunks and
// resets whose every field comes from the input, out-of-range values
// included, against a model written from the documented rules (chunk.h and
// docs/protocol.md, "Chunked transfers"). After every call:
//   * the status is OK exactly when the model finds no violation, and
//     otherwise one of the codes the rules give for the violations present
//     (the rules do not rank them); a failure is sticky: every later call
//     returns that same status until Reset();
//   * the sink is called only for a chunk that breaks no rule, exactly once,
//     at the running offset, with that chunk's bytes; it never receives more
//     than the header declared or the receiver's limit allows;
//   * complete() only after the last announced chunk arrived and the digest
//     matched, and then the sink holds exactly the chunks' bytes in index
//     order, total_bytes of them, hashing to the header's digest;
//   * the accessors agree with the model while a transfer is live.
// Then, as a differential check, ChunkSender cuts the whole input into
// chunks of an input-chosen size and a fresh receiver must rebuild it.
//
// Input: byte 0 configures the receiver (bit 0: no sink; bit 1: a u16 byte
// limit follows; bits 2-4: the sink refuses its n-th call; bit 5: large
// sender chunks), then ops until the input ends. Op byte: low 2 bits kind
// (0 header, 1 and 3 chunk, 2 Reset), upper 6 bits flags:
//   header: b0 u64 transfer_id (else u8), then u8 artefact, b1 u64 total
//           (else u16), b2 u32 chunk_count (else u8), b4 u8 digest size
//           (else 32), b3 32 literal digest bytes (else the SHA-256 of the
//           chunk ops that follow it up to the next header or Reset, cut to
//           total: what lets valid transfers complete);
//   chunk:  b0 transfer_id from the input (b1: u64, else u8; without b0 the
//           last header's), b2 index from the input (b3: u32, else u8;
//           without b2 the count of chunks since the last header), b4 u16
//           data size (else u8, both as declared, so up to 65535), then
//           min(size, 4096) data bytes (zeros once the input runs out).
// All integers little-endian; fields missing at the end read as zero.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "nodefl/protocol/chunk.h"

namespace {

using nodefl::ConstByteSpan;
using nodefl::Status;
using nodefl::StatusCode;
namespace protocol = nodefl::protocol;

constexpr size_t kMaxOps = 64;
constexpr size_t kCap = protocol::kMaxChunkDataBytes;
constexpr size_t kMaxScriptBytes = kMaxOps * kCap;
constexpr StatusCode kSinkRefusal = StatusCode::kUnavailable;  // no rule yields it

void Check(bool ok) {
  if (!ok) std::abort();
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ == size_; }
  uint64_t Uint(size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v |= uint64_t{Byte()} << (8 * i);
    return v;
  }
  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
  // Up to `n` bytes in place; fewer once the input runs out.
  const uint8_t* Take(size_t n, size_t* got) {
    *got = n < size_ - at_ ? n : size_ - at_;
    const uint8_t* p = data_ + at_;
    at_ += *got;
    return p;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

enum class Kind : uint8_t { kHeader, kChunk, kReset };

struct Op {
  Kind kind;
  // Header.
  uint64_t transfer_id;
  uint32_t artefact;
  uint64_t total;
  uint32_t count;
  uint16_t digest_size;
  bool auto_digest;
  uint8_t digest[protocol::kSha256Bytes];
  // Chunk (transfer_id above too).
  uint32_t index;
  uint16_t declared;    // data.size as sent, possibly above capacity
  const uint8_t* data;  // `have` bytes from the input, zeros after that
  size_t have;
};

// The chunk's bytes as the struct carries them: min(declared, capacity).
size_t Carried(const Op& op) { return op.declared < kCap ? op.declared : kCap; }

void FillData(const Op& op, uint8_t* out) {
  const size_t n = Carried(op);
  std::memcpy(out, op.data, op.have);
  std::memset(out + op.have, 0, n - op.have);
}

// What the sink saw during the current transfer.
struct SinkLog {
  const protocol::ChunkReceiver* receiver;
  uint64_t limit;
  unsigned refuse_at;  // 1-based call number, 0 = never
  unsigned calls_total;
  unsigned calls_this_op;
  uint64_t last_offset;
  size_t last_size;
  size_t len;
  uint8_t bytes[kMaxScriptBytes];
};
SinkLog sink_log;

Status RecordSink(void* context, uint64_t offset, ConstByteSpan data) {
  SinkLog& log = *static_cast<SinkLog*>(context);
  ++log.calls_this_op;
  log.last_offset = offset;
  log.last_size = data.size();
  // Pieces arrive in order, without gaps, and never beyond what was declared.
  Check(offset == log.len);
  Check(!data.empty() && data.size() <= kCap);
  Check(offset + data.size() <= log.receiver->total_bytes());
  Check(offset + data.size() <= log.limit);
  Check(log.len + data.size() <= sizeof(log.bytes));
  if (++log.calls_total == log.refuse_at) return Status(kSinkRefusal);
  std::memcpy(log.bytes + log.len, data.data(), data.size());
  log.len += data.size();
  return Status::Ok();
}

// The documented receiver, state by state.
struct Model {
  enum class State : uint8_t { kIdle, kReceiving, kComplete, kFailed };
  State state = State::kIdle;
  StatusCode failed_with = StatusCode::kOk;
  uint64_t transfer_id = 0;
  uint32_t artefact = 0;
  uint64_t total = 0;
  uint32_t count = 0;
  uint64_t received = 0;
  uint32_t next = 0;
  uint8_t digest[protocol::kSha256Bytes] = {};
};
uint8_t model_bytes[kMaxScriptBytes];  // the accepted chunks, in index order

uint32_t Bit(StatusCode c) { return 1u << static_cast<unsigned>(c); }

bool DigestOf(const uint8_t* data, size_t size, const uint8_t* want) {
  uint8_t got[protocol::kSha256Bytes];
  Check(protocol::Sha256(ConstByteSpan(data, size), nodefl::Span<uint8_t>(got)).ok());
  return std::memcmp(got, want, sizeof(got)) == 0;
}

// Applies the outcome of a call to the model. `allowed` is the set of codes
// the rules permit (0 = must be OK).
void Settle(Model& m, Status got, uint32_t allowed) {
  if (allowed == 0) {
    Check(got.ok());
    return;
  }
  Check(!got.ok() && (allowed & Bit(got.code())) != 0);
  m.state = Model::State::kFailed;
  m.failed_with = got.code();
}

void Finish(Model& m, Status got) {
  // Digest over what the model accepted, hashed in one piece (the receiver
  // hashes incrementally).
  if (DigestOf(model_bytes, static_cast<size_t>(m.received), m.digest)) {
    Settle(m, got, 0);
    m.state = Model::State::kComplete;
  } else {
    Settle(m, got, Bit(StatusCode::kDataLoss));
  }
}

void OnHeader(Model& m, protocol::ChunkReceiver& rx, const Op& op, uint64_t limit) {
  static nodefl_wire_ChunkHeader h;
  std::memset(&h, 0, sizeof(h));
  h.transfer_id = op.transfer_id;
  h.artefact = op.artefact;
  h.total_bytes = op.total;
  h.chunk_count = op.count;
  h.sha256.size = op.digest_size;
  std::memcpy(h.sha256.bytes, op.digest, sizeof(h.sha256.bytes));
  sink_log.len = 0;  // a new transfer starts at offset 0
  const Status got = rx.OnHeader(h);
  Check(sink_log.calls_this_op == 0);
  if (m.state == Model::State::kFailed) {
    Check(got.code() == m.failed_with);
    return;
  }
  if (m.state == Model::State::kReceiving) {
    Settle(m, got, Bit(StatusCode::kFailedPrecondition));
    return;
  }
  uint32_t allowed = 0;
  const uint64_t count = op.count;
  if (op.transfer_id == 0 || op.digest_size != protocol::kSha256Bytes || (op.total == 0) != (count == 0) ||
      count > op.total || op.total > count * kCap) {
    allowed |= Bit(StatusCode::kInvalidArgument);
  }
  if (op.total > limit) allowed |= Bit(StatusCode::kResourceExhausted);
  if (allowed != 0) {
    Settle(m, got, allowed);
    return;
  }
  m.transfer_id = op.transfer_id;
  m.artefact = op.artefact;
  m.total = op.total;
  m.count = op.count;
  m.received = 0;
  m.next = 0;
  std::memcpy(m.digest, op.digest, sizeof(m.digest));
  m.state = Model::State::kReceiving;
  if (m.count == 0) {
    Finish(m, got);  // an empty artefact completes with its header
  } else {
    Settle(m, got, 0);
  }
}

void OnChunk(Model& m, protocol::ChunkReceiver& rx, const Op& op, bool has_sink) {
  static nodefl_wire_Chunk c;
  c.transfer_id = op.transfer_id;
  c.index = op.index;
  c.data.size = op.declared;
  FillData(op, c.data.bytes);
  const Status got = rx.OnChunk(c);
  const Model::State before = m.state;
  uint32_t allowed = 0;
  switch (before) {
    case Model::State::kFailed:
      Check(got.code() == m.failed_with);
      Check(sink_log.calls_this_op == 0);
      return;
    case Model::State::kComplete:
      allowed = op.transfer_id == m.transfer_id ? Bit(StatusCode::kOutOfRange) : Bit(StatusCode::kFailedPrecondition);
      break;
    case Model::State::kIdle:
      allowed = Bit(StatusCode::kFailedPrecondition);
      break;
    case Model::State::kReceiving: {
      const uint64_t n = op.declared;
      if (op.transfer_id != m.transfer_id) allowed |= Bit(StatusCode::kInvalidArgument);
      if (op.index != m.next) allowed |= Bit(StatusCode::kOutOfRange);
      if (n > kCap) allowed |= Bit(StatusCode::kInvalidArgument);
      if (n == 0) allowed |= Bit(StatusCode::kDataLoss);
      if (n > m.total - m.received) {
        allowed |= Bit(StatusCode::kDataLoss);
      } else {
        // The rest must still fit the remaining chunks, 1..capacity each.
        const uint64_t bytes_left = m.total - m.received - n;
        const uint64_t chunks_left = uint64_t{m.count} - m.next - 1;
        if (bytes_left < chunks_left || bytes_left > chunks_left * kCap) allowed |= Bit(StatusCode::kDataLoss);
      }
      break;
    }
  }
  if (allowed != 0) {
    Check(sink_log.calls_this_op == 0);  // nothing of a bad chunk reaches the sink
    Settle(m, got, allowed);
    return;
  }
  const size_t n = op.declared;
  if (has_sink) {
    Check(sink_log.calls_this_op == 1);
    Check(sink_log.last_offset == m.received && sink_log.last_size == n);
    if (sink_log.calls_total == sink_log.refuse_at) {
      Settle(m, got, Bit(kSinkRefusal));  // the sink's status, as is
      return;
    }
    Check(std::memcmp(sink_log.bytes + m.received, c.data.bytes, n) == 0);
  } else {
    Check(sink_log.calls_this_op == 0);
  }
  std::memcpy(model_bytes + m.received, c.data.bytes, n);
  m.received += n;
  ++m.next;
  if (m.next == m.count) {
    Finish(m, got);
  } else {
    Settle(m, got, 0);
  }
}

void CheckAgrees(const Model& m, const protocol::ChunkReceiver& rx, bool has_sink, uint64_t limit) {
  Check(rx.complete() == (m.state == Model::State::kComplete));
  Check(rx.receiving() == (m.state == Model::State::kReceiving));
  Check(rx.status().code() == (m.state == Model::State::kFailed ? m.failed_with : StatusCode::kOk));
  Check(rx.received_bytes() <= rx.total_bytes());
  if (m.state == Model::State::kFailed || m.state == Model::State::kIdle) return;
  Check(rx.transfer_id() == m.transfer_id && rx.artefact() == m.artefact);
  Check(rx.total_bytes() == m.total && rx.chunk_count() == m.count);
  Check(rx.received_bytes() == m.received && rx.next_index() == m.next);
  Check(m.total <= limit);
  if (has_sink) {
    Check(sink_log.len == m.received);
    Check(std::memcmp(sink_log.bytes, model_bytes, sink_log.len) == 0);
  }
  if (m.state == Model::State::kComplete) {
    // Everything announced arrived, in index order, and hashes to the digest.
    Check(m.received == m.total && m.next == m.count);
    if (has_sink) Check(DigestOf(sink_log.bytes, sink_log.len, m.digest));
  }
}

size_t Parse(Reader& in, Op* ops) {
  size_t n = 0;
  uint64_t last_id = 0;
  uint32_t since_header = 0;
  while (!in.empty() && n < kMaxOps) {
    const uint8_t code = in.Byte();
    const unsigned flags = code >> 2;
    Op& op = ops[n++];
    std::memset(&op, 0, sizeof(op));
    switch (code & 3) {
      case 0:
        op.kind = Kind::kHeader;
        op.transfer_id = in.Uint(flags & 1 ? 8 : 1);
        op.artefact = in.Byte();
        op.total = in.Uint(flags & 2 ? 8 : 2);
        op.count = static_cast<uint32_t>(in.Uint(flags & 4 ? 4 : 1));
        op.digest_size = flags & 16 ? in.Byte() : protocol::kSha256Bytes;
        op.auto_digest = (flags & 8) == 0;
        if (!op.auto_digest) {
          for (uint8_t& b : op.digest) b = in.Byte();
        }
        last_id = op.transfer_id;
        since_header = 0;
        break;
      case 2:
        op.kind = Kind::kReset;
        since_header = 0;
        break;
      default:
        op.kind = Kind::kChunk;
        op.transfer_id = flags & 1 ? in.Uint(flags & 2 ? 8 : 1) : last_id;
        op.index = flags & 4 ? static_cast<uint32_t>(in.Uint(flags & 8 ? 4 : 1)) : since_header;
        op.declared = static_cast<uint16_t>(in.Uint(flags & 16 ? 2 : 1));
        op.data = in.Take(Carried(op), &op.have);
        ++since_header;
        break;
    }
  }
  return n;
}

// An auto digest hashes the chunk ops that follow its header (up to the next
// header or Reset), concatenated and cut to the announced total.
void FillAutoDigests(Op* ops, size_t n) {
  static uint8_t staged[kMaxScriptBytes];
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].kind != Kind::kHeader || !ops[i].auto_digest) continue;
    size_t len = 0;
    for (size_t j = i + 1; j < n && ops[j].kind == Kind::kChunk; ++j) {
      FillData(ops[j], staged + len);
      len += Carried(ops[j]);
    }
    if (ops[i].total < len) len = static_cast<size_t>(ops[i].total);
    Check(protocol::Sha256(ConstByteSpan(staged, len), nodefl::Span<uint8_t>(ops[i].digest)).ok());
  }
}

// ChunkSender then ChunkReceiver on the same artefact: it must come back intact.
uint8_t rebuilt[1 << 20];
Status Rebuild(void* context, uint64_t offset, ConstByteSpan data) {
  size_t* len = static_cast<size_t*>(context);
  Check(offset == *len && *len + data.size() <= sizeof(rebuilt));
  std::memcpy(rebuilt + *len, data.data(), data.size());
  *len += data.size();
  return Status::Ok();
}

void RoundTrip(const uint8_t* data, size_t size, uint8_t config) {
  if (size > sizeof(rebuilt)) return;
  const size_t chunk_bytes = 1 + (size_t{data[0]} * 131 + size) % (config & 32 ? kCap : 64);
  const uint64_t transfer_id = 1 + size;
  static nodefl_wire_ChunkHeader h;
  static nodefl_wire_Chunk c;

  // The sender's own preconditions.
  protocol::ChunkSender no_id(ConstByteSpan(data, size), 0, 7, chunk_bytes);
  Check(no_id.NextChunk(&c).status().code() == StatusCode::kFailedPrecondition);
  Check(no_id.MakeHeader(&h).code() == StatusCode::kInvalidArgument);
  Check(no_id.NextChunk(&c).status().code() == StatusCode::kFailedPrecondition);
  protocol::ChunkSender too_big(ConstByteSpan(data, size), transfer_id, 7, kCap + 1);
  Check(too_big.MakeHeader(&h).code() == StatusCode::kInvalidArgument);
  protocol::ChunkSender zero(ConstByteSpan(data, size), transfer_id, 7, 0);
  Check(zero.MakeHeader(&h).code() == StatusCode::kInvalidArgument);

  protocol::ChunkSender sender(ConstByteSpan(data, size), transfer_id, 7, chunk_bytes);
  Check(sender.MakeHeader(&h).ok());
  Check(h.transfer_id == transfer_id && h.artefact == 7 && h.total_bytes == size);
  Check(h.chunk_count == protocol::ChunkCount(size, chunk_bytes) && sender.chunk_count() == h.chunk_count);
  Check(h.sha256.size == protocol::kSha256Bytes && DigestOf(data, size, h.sha256.bytes));
  size_t len = 0;
  protocol::ChunkReceiver rx(&Rebuild, &len, size);
  Check(rx.OnHeader(h).ok());
  uint32_t index = 0;
  while (true) {
    const nodefl::Result<bool> more = sender.NextChunk(&c);
    Check(more.ok());
    if (!*more) break;
    Check(!rx.complete());
    Check(c.transfer_id == transfer_id && c.index == index);
    // Equal chunks of the chosen size, a shorter (non-empty) last one.
    Check(c.data.size >= 1 && c.data.size <= chunk_bytes);
    Check(index + 1 == h.chunk_count || c.data.size == chunk_bytes);
    Check(rx.OnChunk(c).ok());
    ++index;
  }
  Check(sender.done() && index == h.chunk_count);
  Check(rx.complete() && len == size && std::memcmp(rebuilt, data, size) == 0);
  // A chunk after the last is refused, for good (size >= 1: c is the last).
  Check(rx.OnChunk(c).code() == StatusCode::kOutOfRange);
  Check(rx.OnChunk(c).code() == StatusCode::kOutOfRange && !rx.complete());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static Op ops[kMaxOps];
  const uint8_t config = data[0];
  Reader in(data + 1, size - 1);
  const bool has_sink = (config & 1) == 0;
  const uint64_t limit = config & 2 ? in.Uint(2) : UINT64_MAX;
  const size_t n = Parse(in, ops);
  FillAutoDigests(ops, n);

  protocol::ChunkReceiver rx(has_sink ? &RecordSink : nullptr, &sink_log, limit);
  sink_log.receiver = &rx;
  sink_log.limit = limit;
  sink_log.refuse_at = (config >> 2) & 7;
  sink_log.calls_total = 0;
  sink_log.len = 0;
  Model m;
  for (size_t i = 0; i < n; ++i) {
    sink_log.calls_this_op = 0;
    switch (ops[i].kind) {
      case Kind::kHeader:
        OnHeader(m, rx, ops[i], limit);
        break;
      case Kind::kChunk:
        OnChunk(m, rx, ops[i], has_sink);
        break;
      case Kind::kReset:
        rx.Reset();
        sink_log.len = 0;
        m = Model();
        break;
    }
    CheckAgrees(m, rx, has_sink, limit);
  }

  RoundTrip(data, size, config);
  return 0;
}
