// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// JobKeyAnnouncer: a role's ephemeral key for the job it runs
// (seal/job_keys.h) and its announcement to the server (wire JobKey). Every
// role that seals device-to-device messages holds one:
//
//   new job (JobStart of round 1 for a job id the role is not running):
//     Begin() draws a fresh key pair, and the role resets its counters and
//     replay windows at the same moment: counters live exactly as long as
//     the key they number messages under;
//   OnPoll: SendIfDue() before any PeerKeyRequest, so the server holds the
//     key before it answers the peers' requests for it;
//   reconnect: OnSessionRestart() announces again (the server keeps the
//     latest key per device and job; the same key again changes nothing);
//   the job over: End() wipes the private key (forward secrecy).
// A JobStart repeating the job the role is running must not call Begin():
// the role keeps its key and its counters and simply goes on.
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/device/device_session.h"
#include "nodefl/seal/job_keys.h"

namespace nodefl::roles {

class JobKeyAnnouncer {
 public:
  // A fresh key for job `job_id` with public salt `salt`; the announcement
  // becomes due. Errors of JobKeyPair::Generate (nothing due then).
  Status Begin(uint64_t job_id, ConstByteSpan salt, crypto::RandomFunction random, void* random_context);
  // Sends the JobKey message for the current job if it is due and the
  // session has room (otherwise it stays due). `round` goes into the
  // envelope for the server's logs.
  Status SendIfDue(device::DeviceSession& session, uint32_t round);
  void OnSessionRestart() { due_ = key_.valid(); }
  void End() {
    key_.Wipe();
    due_ = false;
  }

  bool due() const { return due_; }
  const seal::JobKeyPair& key() const { return key_; }

 private:
  seal::JobKeyPair key_;
  bool due_ = false;
};

}  // namespace nodefl::roles
