// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/roles/job_key_announcer.h"

#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::roles {

Status JobKeyAnnouncer::Begin(uint64_t job_id, ConstByteSpan salt, crypto::RandomFunction random,
                              void* random_context) {
  due_ = false;
  NODEFL_TRY(key_.Generate(job_id, salt, random, random_context));
  due_ = true;
  return Status::Ok();
}

Status JobKeyAnnouncer::SendIfDue(device::DeviceSession& session, uint32_t round) {
  if (!due_ || !key_.valid() || !session.CanSend()) return Status::Ok();
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_key_tag, key_.job_id(), round);
  NODEFL_TRY(protocol::SetBytes(&m.body.job_key.public_key, key_.public_key()));
  NODEFL_TRY(session.Send(m));
  due_ = false;
  return Status::Ok();
}

}  // namespace nodefl::roles
