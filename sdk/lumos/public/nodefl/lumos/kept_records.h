// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The kept-neighbour upload the Lumos tree jobs share in paper mode (the
// trimming role's kTrimKept, the MCMC role's kMcmcKept): the ids of the
// peers with `keep` set, ascending, as many u32 per JobData record as fit,
// resumable from `*cursor` when the session runs out of room.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/little_endian.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"

namespace nodefl::lumos {

// `Peer` has `uint32_t id` and `bool keep`. Done when *cursor == peers.size().
template <typename Peer>
Status SendKeptRecords(device::DeviceSession& session, uint64_t job_id, uint32_t round, uint32_t kind,
                       Span<const Peer> peers, size_t* cursor) {
  while (*cursor < peers.size() && session.CanSend()) {
    nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id, round);
    m.body.job_data.kind = kind;
    const size_t capacity = sizeof(m.body.job_data.data.bytes) / 4;
    size_t n = 0;
    while (*cursor < peers.size() && n < capacity) {
      const Peer& p = peers[(*cursor)++];
      if (!p.keep) continue;
      StoreU32Le(p.id, m.body.job_data.data.bytes + 4 * n);
      ++n;
    }
    if (n == 0) break;
    m.body.job_data.data.size = static_cast<pb_size_t>(4 * n);
    NODEFL_TRY(session.Send(m));
  }
  return Status::Ok();
}

}  // namespace nodefl::lumos
