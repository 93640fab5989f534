// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/compare/session_result.h"

namespace nodefl::compare {

SessionResult MakeSessionResult(uint32_t session, uint16_t count, const ComparisonSession* run, Status refusal,
                                bool results_public) {
  SessionResult r;
  r.session = session;
  r.count = count;
  if (run == nullptr) {
    r.done = false;
    r.code = static_cast<uint8_t>(refusal.code());
    return r;
  }
  const ComparisonSession::Counters& k = run->counters();
  r.done = run->done();
  r.code = static_cast<uint8_t>(r.done ? StatusCode::kOk : run->abort_reason().code());
  r.bytes_sent = static_cast<uint32_t>(k.bytes_sent);
  r.bytes_received = static_cast<uint32_t>(k.bytes_received);
  r.messages_sent = static_cast<uint16_t>(k.messages_sent > 0xFFFF ? 0xFFFF : k.messages_sent);
  if (r.done && results_public) {
    r.bit_bytes = static_cast<uint16_t>((2u * count + 7u) / 8u);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t bits = (run->greater(i) ? 1u : 0u) | (run->equal(i) ? 2u : 0u);
      r.bits[(2 * i) / 8] = static_cast<uint8_t>(r.bits[(2 * i) / 8] | (bits << ((2 * i) % 8)));
    }
  }
  return r;
}

}  // namespace nodefl::compare
