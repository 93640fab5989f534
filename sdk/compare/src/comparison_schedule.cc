// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/comparison_schedule.h"

#include "nodefl/ot/base_ot.h"
#include "nodefl/ot/iknp.h"

namespace nodefl::compare {

Status CheckShape(const RunShape& shape) {
  if (shape.count == 0 || shape.count > 0xFFFF) return Status::InvalidArgument();
  if (shape.max_message_bytes < kMinMessageBytes || shape.max_message_bytes > 0xFFFF) {
    return Status::InvalidArgument();
  }
  if (shape.plan.width == 0 || shape.plan.digits == 0) return Status::InvalidArgument();
  return Status::Ok();
}

void Schedule::AddPhase(MessageType type, uint8_t level, uint64_t items, uint64_t per_message) {
  if (items == 0) return;
  phases_[phase_count_++] = Phase{type, level, static_cast<uint32_t>(items),
                                  static_cast<uint32_t>(per_message == 0 ? 1 : per_message)};
}

void Schedule::Init(const RunShape& shape, Role sender) {
  shape_ = shape;
  phase_count_ = phase_ = position_ = sequence_ = 0;
  const uint64_t payload = shape.max_message_bytes - kMessageHeaderBytes;
  const uint64_t points_per_message = payload / ot::kOtPointBytes;
  const bool a = sender == Role::kA;
  if (shape.mode == OtMode::kBase) {
    if (a) {
      AddPhase(MessageType::kBasePoint, 0, 1, 1);
    } else {
      AddPhase(MessageType::kBasePoints, 0, shape.total_ots(), points_per_message);
    }
  } else {
    if (a) {
      AddPhase(MessageType::kBasePoints, 0, ot::kIknpBaseOts, points_per_message);
    } else {
      AddPhase(MessageType::kBasePoint, 0, 1, 1);
      AddPhase(MessageType::kExtension, 0, shape.extension_blocks(), 1);
    }
  }
  if (a) AddPhase(MessageType::kTables, 0, shape.count, payload / shape.plan.table_bytes());
  for (uint32_t level = 1; level <= shape.plan.depth; ++level) {
    const uint64_t bits = 4u * shape.plan.combinations[level];
    AddPhase(MessageType::kOpenings, static_cast<uint8_t>(level), shape.count, payload * 8 / bits);
  }
  if (shape.reveal) AddPhase(MessageType::kOutput, 0, shape.count, (payload - kOutputTagBytes) * 8 / 2);
}

uint32_t Schedule::PayloadBytes(const Phase& phase, uint32_t count) const {
  switch (phase.type) {
    case MessageType::kBasePoint:
      return ot::kOtPointBytes;
    case MessageType::kBasePoints:
      return count * static_cast<uint32_t>(ot::kOtPointBytes);
    case MessageType::kExtension:
      return static_cast<uint32_t>(ot::kIknpBlockBytes);
    case MessageType::kTables:
      return count * shape_.plan.table_bytes();
    case MessageType::kOpenings:
      return (count * 4u * shape_.plan.combinations[phase.level] + 7u) / 8u;
    case MessageType::kOutput:
      return (count * 2u + 7u) / 8u + static_cast<uint32_t>(kOutputTagBytes);
    case MessageType::kAbort:
      return 0;
  }
  return 0;
}

MessageSpec Schedule::Current() const {
  const Phase& p = phases_[phase_];
  MessageSpec m;
  m.type = p.type;
  m.level = p.level;
  m.first = position_;
  m.count = p.items - position_ < p.per_message ? p.items - position_ : p.per_message;
  m.payload_bytes = PayloadBytes(p, m.count);
  return m;
}

void Schedule::Advance() {
  if (done()) return;
  const MessageSpec m = Current();
  position_ += m.count;
  ++sequence_;
  if (position_ >= phases_[phase_].items) {
    ++phase_;
    position_ = 0;
  }
}

uint32_t Schedule::TotalMessages() const {
  uint32_t total = 0;
  for (uint32_t i = 0; i < phase_count_; ++i) {
    total += (phases_[i].items + phases_[i].per_message - 1) / phases_[i].per_message;
  }
  return total;
}

}  // namespace nodefl::compare
