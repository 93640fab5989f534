// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The fixed message sequence of one party in a comparison run. Both parties
// derive both sequences from the public parameters (plan, number of
// comparisons, OT mode, message size, reveal), so a receiver knows exactly
// which message comes next and refuses anything else. Neither sequence
// depends on the inputs: that is what makes message counts and sizes leak
// nothing (docs/secure-comparison.md).
//
// Party A holds x and is the sender of every OT the protocol uses; party B
// holds y and chooses. Phases, in order:
//   A, base OTs:       kBasePoint (a*G)      | tables | openings 1..depth | output
//   B, base OTs:       kBasePoints (per OT)  |          openings 1..depth | output
//   A, IKNP extension: kBasePoints (128)     | tables | openings 1..depth | output
//   B, IKNP extension: kBasePoint | kExtension (per 128 OTs) | openings 1..depth | output
// ("output" only when the result is revealed to both).
//
// Message layout (little endian):
//   version (1) | type (1) | sequence (2) | level (1) | first (4) | count (2) | payload
// `sequence` counts the sender's messages from 0; `first` and `count` name
// the OTs, blocks or comparisons the payload covers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/compare/comparison_plan.h"
#include "nodefl/core/status.h"

namespace nodefl::compare {

inline constexpr uint8_t kMessageVersion = 1;
inline constexpr size_t kMessageHeaderBytes = 11;
inline constexpr size_t kOutputTagBytes = 16;
// Every message kind must fit: an IKNP block (2,048 bytes) plus header.
inline constexpr size_t kMinMessageBytes = 2048 + kMessageHeaderBytes;

enum class MessageType : uint8_t {
  kBasePoint = 1,   // one P-256 point
  kBasePoints = 2,  // `count` points for OTs first.. (base mode) or base OTs first.. (IKNP)
  kExtension = 3,   // one IKNP block (first = block index)
  kTables = 4,      // OT tables of comparisons first..
  kOpenings = 5,    // Beaver openings of level `level` for comparisons first..
  kOutput = 6,      // output shares of comparisons first.., with a transcript tag
  kAbort = 7,       // the sender gave up; no payload
};

struct RunShape {
  ComparisonPlan plan;
  uint32_t count = 0;  // comparisons in the run
  OtMode mode = OtMode::kBase;
  bool reveal = true;
  uint32_t max_message_bytes = kMinMessageBytes;  // header included

  uint64_t total_ots() const { return uint64_t{count} * plan.ots; }
  uint64_t extension_blocks() const { return (total_ots() + 127) / 128; }
};

struct MessageSpec {
  MessageType type = MessageType::kAbort;
  uint8_t level = 0;
  uint32_t first = 0;
  uint32_t count = 0;
  uint32_t payload_bytes = 0;
};

// kInvalidArgument for a count of 0, above 65,535, or a message size below
// kMinMessageBytes (or above 65,535).
Status CheckShape(const RunShape& shape);

class Schedule {
 public:
  // `shape` must pass CheckShape.
  void Init(const RunShape& shape, Role sender);
  bool done() const { return phase_ >= phase_count_; }
  // The next message (valid while !done()).
  MessageSpec Current() const;
  void Advance();
  uint32_t sent() const { return sequence_; }
  MessageType current_type() const { return phases_[phase_].type; }
  // Messages in the whole sequence (for accounting and tests).
  uint32_t TotalMessages() const;

 private:
  struct Phase {
    MessageType type;
    uint8_t level;
    uint32_t items;          // OTs, points, blocks or comparisons
    uint32_t per_message;
  };
  void AddPhase(MessageType type, uint8_t level, uint64_t items, uint64_t per_message);
  uint32_t PayloadBytes(const Phase& phase, uint32_t count) const;

  RunShape shape_;
  Phase phases_[4 + kMaxDepth] = {};
  uint32_t phase_count_ = 0;
  uint32_t phase_ = 0;
  uint32_t position_ = 0;  // items of the current phase already sent
  uint32_t sequence_ = 0;
};

}  // namespace nodefl::compare
