// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Role: one algorithm's device-side logic (FedWalk binning, a walk step, the
// neighbour-echo plumbing job, ...). The DeviceSession owns the connection
// and hands each role the job messages addressed to it; roles answer through
// the session. Roles never see bytes, TLS or timers other than `now_us`.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"
#include "nodefl/protocol/envelope.pb.h"

namespace nodefl::device {

class DeviceSession;

class Role {
 public:
  // The job kind this role serves (nodefl_wire_JobKind).
  virtual nodefl_wire_JobKind kind() const = 0;

  // A message for a job this role runs: JobStart (which also binds the job id
  // to this role), RelayDeliver, PeerCertificate, ChunkHeader/Chunk. The
  // session guarantees room for at least one outgoing frame during this
  // call, so a handler may Send() exactly one message; more work goes to
  // OnPoll. An error Status ends the connection with that status.
  virtual Status OnMessage(const nodefl_wire_Envelope& message, DeviceSession& session) = 0;

  // Called by DeviceSession::Poll: continue bulk work (e.g. send the next
  // sealed messages) until Send() reports kResourceExhausted, then return OK.
  virtual Status OnPoll(uint64_t now_us, DeviceSession& session) = 0;

  // Called when a Welcome arrives after a reconnect (`resumed`: the server
  // kept the session). Whatever the role had in flight on the old
  // connection (requests, reports not yet written) may be lost: re-send what
  // it still needs. Default: nothing to do.
  virtual void OnSessionRestart(bool /*resumed*/) {}

 protected:
  // Roles are never deleted through this interface (no heap in the core).
  ~Role() = default;
};

}  // namespace nodefl::device
