// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/secagg/aggregate_role.h"

#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::secagg {

SecureAggregateRole::SecureAggregateRole(uint32_t own_id, const SecureAggregateMemory& memory,
                                         const tls::TlsCredentials& credentials, Drbg& random)
    : own_id_(own_id), random_(random), link_(own_id, memory, credentials, random) {
  link_.SetInputFunction(&FillSynthetic, this);
}

void SecureAggregateRole::SetInputFunction(InputFunction fn, void* context) {
  custom_input_ = fn != nullptr;
  if (custom_input_) {
    link_.SetInputFunction(fn, context);
  } else {
    link_.SetInputFunction(&FillSynthetic, this);
  }
}

Status SecureAggregateRole::FillSynthetic(void* context, const AggStart& start, Span<uint32_t> out) {
  const auto* role = static_cast<const SecureAggregateRole*>(context);
  for (uint32_t i = 0; i < start.length; ++i) {
    out[i] = SyntheticInput(role->params_.input_seed, start.aggregation, role->own_id_, i);
  }
  return Status::Ok();
}

Status SecureAggregateRole::StartJob(const nodefl_wire_Envelope& message) {
  if (message.round == 1) {
    if (phase_ != Phase::kIdle && message.job_id == job_id_) {
      report_.OnRepeatedRound(1);
      return Status::Ok();  // the job we run, again: keep keys and counters
    }
    NODEFL_TRY_ASSIGN(SecureAggregateParameters params,
                      DecodeSecureAggregateParameters(protocol::BytesOf(message.body.job_start.parameters)));
    NODEFL_TRY(job_key_.Begin(message.job_id, ConstByteSpan(params.salt, kAggregateSaltBytes), &crypto::DrbgRandom,
                              &random_));
    params_ = params;
    job_id_ = message.job_id;
    report_.Reset();
    link_.StartJob(job_id_, job_key_.key());
    phase_ = Phase::kRunning;
    return Status::Ok();
  }
  if (message.job_id != job_id_) return Status::FailedPrecondition();
  if (message.round == 2) {
    if (phase_ == Phase::kRunning) phase_ = Phase::kReporting;
    if (phase_ == Phase::kDone) report_.OnRepeatedRound(2);
    return Status::Ok();
  }
  return Status::InvalidArgument();
}

Status SecureAggregateRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession&) {
  if (message.which_body == nodefl_wire_Envelope_job_start_tag) return StartJob(message);
  // Everything else belongs to the job we run, or is ignored.
  if (phase_ == Phase::kIdle || message.job_id != job_id_) return Status::Ok();
  switch (message.which_body) {
    case nodefl_wire_Envelope_peer_certificate_tag:
      (void)link_.OnCertificate(message.body.peer_certificate);
      break;
    case nodefl_wire_Envelope_relay_deliver_tag:
      link_.OnDelivery(message.body.relay_deliver);
      break;
    case nodefl_wire_Envelope_job_data_tag:
      if (IsAggregationKind(message.body.job_data.kind)) {
        link_.OnRecord(message.body.job_data.kind, protocol::BytesOf(message.body.job_data.data));
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

Status SecureAggregateRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  const AggregationLink::Stats& ls = link_.stats();
  const AggregationClient::Stats& cs = link_.client().stats();
  r.kind = nodefl_wire_JobKind_JOB_KIND_SECURE_AGGREGATE;
  r.code = static_cast<uint32_t>(outcome.code());
  r.sent = cs.completed;
  r.received = ls.opened;
  r.duplicates = ls.duplicates + cs.replays;
  r.rejected = ls.rejected + ls.held_dropped + cs.records_refused + cs.messages_refused;
  return session.Send(m);
}

Status SecureAggregateRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (phase_ == Phase::kIdle || phase_ == Phase::kDone) return Status::Ok();
  NODEFL_TRY(job_key_.SendIfDue(session, 1));
  if (job_key_.due()) return Status::Ok();  // the server must hold our key before peers ask for it
  NODEFL_TRY(link_.Pump(session, 1));
  if (phase_ == Phase::kReporting && session.CanSend()) {
    const Status outcome = link_.stats().key_failures == 0 ? Status::Ok() : Status::Unauthenticated();
    NODEFL_TRY(Report(session, 2, outcome));
    phase_ = Phase::kDone;
    job_key_.End();
    link_.EndJob();
  }
  return Status::Ok();
}

void SecureAggregateRole::OnSessionRestart(bool) {
  link_.OnRestart();
  if (phase_ == Phase::kRunning || phase_ == Phase::kReporting) job_key_.OnSessionRestart();
  report_.OnSessionRestart();
}

}  // namespace nodefl::secagg
