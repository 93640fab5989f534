// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/lumos/trim_role.h"

#include "nodefl/core/little_endian.h"
#include "nodefl/core/sorted_search.h"
#include "nodefl/lumos/kept_records.h"
#include "nodefl/protocol/envelope_codec.h"

namespace nodefl::lumos {

LumosTrimRole::LumosTrimRole(uint32_t own_id, Span<TrimPeer> peers) : own_id_(own_id), peers_(peers) {}

Status LumosTrimRole::Init() {
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].id == own_id_ || (i > 0 && peers_[i - 1].id >= peers_[i].id)) return Status::InvalidArgument();
  }
  return Status::Ok();
}

void LumosTrimRole::Bind(uint32_t greedy_workload) {
  bound_ = true;
  used_ = false;
  greedy_workload_ = greedy_workload;
  workload_ = 0;
  for (TrimPeer& p : peers_) {
    if (p.keep) ++workload_;
  }
  phase_ = Phase::kIdle;
}

uint32_t LumosTrimRole::Uncovered() const {
  uint32_t n = 0;
  for (const TrimPeer& p : peers_) {
    if (!p.keep && !p.peer_keeps) ++n;
  }
  return n;
}

TrimPeer* LumosTrimRole::FindPeer(uint32_t id) {
  return FindSorted(peers_, id, [](const TrimPeer& p) { return p.id; });
}

void LumosTrimRole::Keep(TrimPeer& p) {
  if (!p.keep) {
    p.keep = true;
    ++workload_;
  }
  // From now on this device covers the edge, whatever the other end does.
  p.peer_keeps = false;
}

void LumosTrimRole::LearnPeerKeeps(TrimPeer& p) {
  // A search from `p` travels only along an edge `p` keeps.
  p.peer_keeps = true;
  p.unsettled = false;
}

void LumosTrimRole::Drop(TrimPeer& p) {
  // Only ever after `p` said it keeps the edge (a reverse echo).
  p.peer_keeps = true;
  p.unsettled = false;
  if (p.keep) {
    p.keep = false;
    --workload_;
    ++stats_.dropped;
  }
}

Status LumosTrimRole::StartJob(const nodefl_wire_Envelope& message) {
  const nodefl_wire_JobStart& start = message.body.job_start;
  Result<TrimRoundParameters> params =
      DecodeTrimParameters(ConstByteSpan(start.parameters.bytes, start.parameters.size));
  if (message.job_id != job_id_ || phase_ == Phase::kIdle) {
    // A new job. It must begin with its ready round, on a fresh binding.
    if (!params.ok() || params->phase != TrimPhase::kReady) return Status::InvalidArgument();
    job_id_ = message.job_id;
    report_.Reset();
    stats_ = Stats{};
    step_ = 0;
    parent_ = nullptr;
    awaiting_ = dues_ = 0;
    outcome_due_ = false;
    summary_sent_ = false;
    for (TrimPeer& p : peers_) {
      p.absent = p.awaiting_echo = p.search_due = p.echo_due = false;
    }
    if (!bound_ || used_) {
      // No greedy result here (or it was used by an earlier job, whose
      // counters must not restart): take no part, and say why.
      phase_ = Phase::kDone;
      return Status::Ok();  // the report goes out from OnPoll
    }
    used_ = true;
    phase_ = Phase::kReady;
    return Status::Ok();
  }
  if (!params.ok()) return Status::InvalidArgument();
  if (message.round <= report_.last_round()) {
    report_.OnRepeatedRound(message.round);  // the server asks again
    return Status::Ok();
  }
  switch (params->phase) {
    case TrimPhase::kReady:
      return Status::Ok();  // repeated
    case TrimPhase::kDrain:
      if (phase_ == Phase::kReady || phase_ == Phase::kDraining) {
        phase_ = Phase::kDraining;
        BeginStep(params->step, params->threshold);
      }
      return Status::Ok();
    case TrimPhase::kReport:
      if (phase_ == Phase::kReady || phase_ == Phase::kDraining) {
        phase_ = Phase::kReporting;
        report_round_ = message.round;
        upload_kept_ = params->upload_kept;
        kept_cursor_ = 0;
        summary_sent_ = false;
      }
      return Status::Ok();
  }
  return Status::InvalidArgument();
}

void LumosTrimRole::BeginStep(uint32_t step, uint32_t threshold) {
  if (step <= step_) return;  // the JobStart of a step a search already began
  step_ = step;
  threshold_ = threshold;
  ++stats_.steps;
  parent_ = nullptr;
  sink_ = false;
  awaiting_ = 0;
  child_reversed_ = false;
  subtree_done_ = false;
  step_relief_ = 0;
  for (TrimPeer& p : peers_) {
    p.awaiting_echo = false;
    if (p.search_due) {  // a search of the last step never went out
      p.search_due = false;
      --dues_;
    }
  }
  root_ = workload_ > threshold_;
  if (root_) {
    ++stats_.roots;
    for (TrimPeer& p : peers_) {
      if (!p.keep || !p.keyed || p.absent) continue;
      p.search_due = p.awaiting_echo = true;
      ++awaiting_;
      ++dues_;
    }
    if (awaiting_ == 0) SubtreeDone();
  } else {
    // A non-root's outcome is known now: it is never over the threshold
    // (it may accept one edge, and only from below it).
    outcome_due_ = true;
    outcome_root_ = false;
    outcome_still_over_ = false;
  }
}

void LumosTrimRole::SubtreeDone() {
  if (subtree_done_) return;
  subtree_done_ = true;
  if (root_) {
    outcome_due_ = true;
    outcome_root_ = true;
    outcome_still_over_ = workload_ > threshold_;
    return;
  }
  if (parent_ == nullptr) return;
  TrimPeer& p = *parent_;
  if (child_reversed_) {
    // Pass one reversal up: keep the parent's edge before saying so.
    Keep(p);
    ++stats_.passed_up;
  }
  if (!p.echo_due) ++dues_;
  p.echo_due = true;
  p.echo_reverse = child_reversed_;
  p.echo_step = step_;
}

void LumosTrimRole::OnSearch(TrimPeer& from, const TrimMessage& m) {
  if (m.step < step_) {
    ++stats_.stale;  // its sender has moved on too
    return;
  }
  if (m.step > step_) BeginStep(m.step, m.threshold);
  LearnPeerKeeps(from);
  const bool first = !root_ && parent_ == nullptr && !subtree_done_;
  if (first) {
    parent_ = &from;
    sink_ = workload_ < threshold_;
  }
  if (sink_ && workload_ < threshold_) {
    // Accept: take the edge over (the sender stops keeping it on our
    // echo). A device below T accepts every search that reaches it while it
    // stays below T: each is another path ending here.
    Keep(from);
    ++stats_.accepted;
    subtree_done_ = true;
    if (!from.echo_due) ++dues_;
    from.echo_due = true;
    from.echo_reverse = true;
    from.echo_step = step_;
    return;
  }
  if (!first) {
    if (!from.echo_due) ++dues_;
    from.echo_due = true;
    from.echo_reverse = false;
    from.echo_step = step_;
    return;
  }
  for (TrimPeer& p : peers_) {
    if (&p == &from || !p.keep || !p.keyed || p.absent) continue;
    p.search_due = p.awaiting_echo = true;
    ++awaiting_;
    ++dues_;
  }
  if (awaiting_ == 0) SubtreeDone();
}

void LumosTrimRole::MarkAbsent(TrimPeer& p) {
  if (p.absent) return;
  p.absent = true;
  // It will answer nothing: stop waiting for it. Its edges stay as they are.
  if (p.search_due) {
    p.search_due = false;
    --dues_;
  }
  if (p.awaiting_echo) {
    p.awaiting_echo = false;
    --awaiting_;
    if (awaiting_ == 0 && (root_ || parent_ != nullptr)) SubtreeDone();
  }
}

void LumosTrimRole::OnEcho(TrimPeer& from, const TrimMessage& m) {
  // A reverse echo is a fact whatever its step: `from` keeps the edge now.
  if (m.reverse) Drop(from);
  if (m.step != step_ || !from.awaiting_echo) {
    ++stats_.stale;
    return;
  }
  from.awaiting_echo = false;
  if (from.search_due) {  // cannot happen (no echo before the search), but keep the counts right
    from.search_due = false;
    --dues_;
  }
  --awaiting_;
  if (m.reverse) {
    if (root_) {
      ++step_relief_;
      ++stats_.relief;
    } else {
      child_reversed_ = true;
    }
  }
  if (awaiting_ == 0) SubtreeDone();
}

void LumosTrimRole::HandleDelivery(const nodefl_wire_Envelope& message) {
  const nodefl_wire_RelayDeliver& d = message.body.relay_deliver;
  TrimPeer* peer = FindPeer(d.src);
  if (peer == nullptr || !peer->keyed || message.job_id != job_id_ ||
      (phase_ != Phase::kReady && phase_ != Phase::kDraining)) {
    ++stats_.rejected;
    return;
  }
  uint8_t plain[kTrimMessageBytes + 16];
  uint64_t counter = 0;
  Result<size_t> opened =
      seal::Open(peer->keys, d.src, own_id_, job_id_, protocol::BytesOf(d.sealed), ByteSpan(plain), &counter);
  if (!opened.ok()) {
    ++stats_.rejected;
    return;
  }
  Result<TrimMessage> m = DecodeTrimMessage(ConstByteSpan(plain, *opened));
  if (!m.ok()) {
    ++stats_.rejected;
    return;
  }
  if (!peer->window.Accept(counter).ok()) {
    ++stats_.duplicates;
    return;
  }
  ++stats_.messages_received;
  if (phase_ == Phase::kReady) phase_ = Phase::kDraining;  // a search overtook step 1's JobStart
  if (m->type == TrimMessageType::kSearch) {
    OnSearch(*peer, *m);
  } else {
    OnEcho(*peer, *m);
  }
}

Status LumosTrimRole::OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) {
  switch (message.which_body) {
    case nodefl_wire_Envelope_job_start_tag:
      NODEFL_TRY(StartJob(message));
      break;
    case nodefl_wire_Envelope_relay_deliver_tag:
      HandleDelivery(message);
      break;
    case nodefl_wire_Envelope_job_data_tag:
      if (message.job_id == job_id_ && message.body.job_data.kind == kTrimAbsent) {
        const ConstByteSpan bytes = protocol::BytesOf(message.body.job_data.data);
        if (bytes.size() % 4 != 0) return Status::Ok();
        for (size_t at = 0; at < bytes.size(); at += 4) {
          if (TrimPeer* p = FindPeer(LoadU32Le(bytes.data() + at))) MarkAbsent(*p);
        }
      }
      break;
    default:
      return Status::Ok();
  }
  return OnPoll(0, session);
}

Status LumosTrimRole::SendSealed(TrimPeer& peer, const TrimMessage& m, device::DeviceSession& session) {
  uint8_t plain[kTrimMessageBytes];
  Result<size_t> n = EncodeTrimMessage(m, ByteSpan(plain));
  if (!n.ok()) return n.status();
  nodefl_wire_Envelope& e = session.NewMessage(nodefl_wire_Envelope_relay_send_tag, job_id_, step_ + 1);
  e.body.relay_send.dst = peer.id;
  const seal::SealHeader header{own_id_, peer.id, job_id_, peer.next_counter};
  Result<size_t> sealed =
      seal::Seal(peer.keys, header, ConstByteSpan(plain, *n), ByteSpan(e.body.relay_send.sealed.bytes));
  if (!sealed.ok()) return sealed.status();
  e.body.relay_send.sealed.size = static_cast<pb_size_t>(*sealed);
  NODEFL_TRY(session.Send(e));
  ++peer.next_counter;
  return Status::Ok();
}

Status LumosTrimRole::Flush(device::DeviceSession& session) {
  for (size_t i = 0; dues_ > 0 && i < peers_.size() && session.CanSend(); ++i) {
    TrimPeer& p = peers_[i];
    // Echoes first: they finish other devices' subtrees.
    if (p.echo_due) {
      TrimMessage m;
      m.type = TrimMessageType::kEcho;
      m.reverse = p.echo_reverse;
      m.step = p.echo_step;
      m.threshold = threshold_;
      NODEFL_TRY(SendSealed(p, m, session));
      p.echo_due = false;
      --dues_;
      ++stats_.echoes_sent;
      if (!session.CanSend()) break;
    }
    if (p.search_due) {
      TrimMessage m;
      m.type = TrimMessageType::kSearch;
      m.step = step_;
      m.threshold = threshold_;
      NODEFL_TRY(SendSealed(p, m, session));
      p.search_due = false;
      --dues_;
      ++stats_.searches_sent;
    }
  }
  return Status::Ok();
}

Status LumosTrimRole::SendOutcome(device::DeviceSession& session) {
  TrimStepOutcome o;
  o.step = step_;
  o.root = outcome_root_;
  o.still_over = outcome_still_over_;
  o.relief = outcome_root_ ? step_relief_ : 0;
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, step_ + 1);
  m.body.job_data.kind = kTrimStepOutcome;
  Result<size_t> n = EncodeTrimStepOutcome(o, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  NODEFL_TRY(session.Send(m));
  outcome_due_ = false;
  outcome_sent_step_ = step_;
  return Status::Ok();
}

Status LumosTrimRole::SendKept(device::DeviceSession& session) {
  return SendKeptRecords(session, job_id_, report_round_, kTrimKept,
                         Span<const TrimPeer>(peers_.data(), peers_.size()), &kept_cursor_);
}

Status LumosTrimRole::SendSummary(device::DeviceSession& session, uint32_t round) {
  TrimSummary s;
  s.workload = workload_;
  s.greedy_workload = greedy_workload_;
  s.uncovered = Uncovered();
  for (const TrimPeer& p : peers_) {
    if (!p.keyed) ++s.unkeyed;
    if (p.keep && p.unsettled) ++s.unsettled;
  }
  s.messages_sent = stats_.searches_sent + stats_.echoes_sent;
  s.messages_received = stats_.messages_received;
  s.rejected = stats_.rejected;
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_data_tag, job_id_, round);
  m.body.job_data.kind = kTrimSummary;
  Result<size_t> n = EncodeTrimSummary(s, ByteSpan(m.body.job_data.data.bytes));
  if (!n.ok()) return n.status();
  m.body.job_data.data.size = static_cast<pb_size_t>(*n);
  return session.Send(m);
}

Status LumosTrimRole::Report(device::DeviceSession& session, uint32_t round, Status outcome) {
  report_.Sent(round, outcome);
  nodefl_wire_Envelope& m = session.NewMessage(nodefl_wire_Envelope_job_report_tag, job_id_, round);
  nodefl_wire_JobReport& r = m.body.job_report;
  r.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM;
  r.code = static_cast<uint32_t>(outcome.code());
  r.sent = stats_.searches_sent + stats_.echoes_sent;
  r.received = stats_.messages_received;
  r.duplicates = stats_.duplicates;
  r.rejected = stats_.rejected;
  return session.Send(m);
}

Status LumosTrimRole::OnPoll(uint64_t, device::DeviceSession& session) {
  NODEFL_TRY(report_.Flush(session.CanSend(),
                           [&](uint32_t round, Status outcome) { return Report(session, round, outcome); }));
  if (job_id_ == 0) return Status::Ok();
  if (phase_ == Phase::kDone && report_.last_round() == 0 && session.CanSend()) {
    // Refused at the ready round (no greedy result to start from).
    return Report(session, 1, Status::FailedPrecondition());
  }
  if (phase_ == Phase::kReady && report_.last_round() == 0) {
    if (!summary_sent_ && session.CanSend()) {
      NODEFL_TRY(SendSummary(session, 1));
      summary_sent_ = true;
    }
    if (summary_sent_ && session.CanSend()) NODEFL_TRY(Report(session, 1, Status::Ok()));
  }
  NODEFL_TRY(Flush(session));
  if (outcome_due_ && session.CanSend()) NODEFL_TRY(SendOutcome(session));
  if (phase_ == Phase::kReporting) {
    // Answers still owed to neighbours go first; then the device reports.
    if (upload_kept_) NODEFL_TRY(SendKept(session));
    if (upload_kept_ && kept_cursor_ < peers_.size()) return Status::Ok();
    if (!summary_sent_ && session.CanSend()) {
      NODEFL_TRY(SendSummary(session, report_round_));
      summary_sent_ = true;
    }
    if (summary_sent_ && session.CanSend()) {
      NODEFL_TRY(Report(session, report_round_, Uncovered() == 0 ? Status::Ok() : Status::DataLoss()));
      phase_ = Phase::kDone;
      // Nothing more is sealed or opened: forget the keys (forward secrecy).
      for (TrimPeer& p : peers_) {
        p.keys.Wipe();
        p.keyed = false;
      }
    }
  }
  return Status::Ok();
}

void LumosTrimRole::OnSessionRestart(bool) {
  // Relayed messages queue at the server while a device is away; JobStarts,
  // reports and the step's outcome may have died with the old connection:
  // repeat them (the server ignores what it already has).
  report_.OnSessionRestart();
  if (phase_ == Phase::kDraining && outcome_sent_step_ == step_ && step_ != 0) outcome_due_ = true;
}

}  // namespace nodefl::lumos
