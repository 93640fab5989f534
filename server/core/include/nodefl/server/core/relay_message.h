// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One message the relay holds for a destination (relay.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace nodefl::server {

// The payload is immutable and shared between the pending list, the
// writers that took it and the relay's journal (relay_journal.h), so
// redelivery and journaling need no copy.
struct RelayMessage {
  uint64_t relay_id = 0;
  uint64_t job_id = 0;
  uint32_t src = 0;
  uint32_t round = 0;
  uint32_t sealed_size = 0;
  std::shared_ptr<const uint8_t[]> sealed;

  std::span<const uint8_t> sealed_bytes() const { return {sealed.get(), sealed_size}; }
};

}  // namespace nodefl::server
