// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// LumosTrimRole: the device side of JOB_KIND_LUMOS_TRIM (contract:
// protocol/lumos/trim_format.h; server: server/jobs lumos_trim_job.h;
// method: docs/lumos.md, "Draining to a public threshold").
//
// The device starts from its greedy orientation (Lumos Alg. 1, the
// secure-compare job; trim_binding.h takes it over) and, in each drain
// step, compares its own workload with the step's public threshold: no
// secure comparison is needed for that, and no workload or degree leaves
// the device in any message. What a search or an echo tells the neighbour
// that receives it is stated in docs/privacy.md.
//
// Coverage (Lumos Eq. 10) holds at every moment, whatever is lost or late:
// a device starts keeping an edge before it tells the other endpoint so
// (the reverse echo), and stops keeping one only after the other endpoint
// told it that it keeps it. A lost echo leaves the edge kept by both.
//
// Memory: one TrimPeer per neighbour, caller-provided; nothing else grows
// with the degree. No heap in this code (AES-GCM key set-up inside MbedTLS
// allocates, seal.h).
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/device/device_session.h"
#include "nodefl/device/role.h"
#include "nodefl/protocol/lumos/trim_format.h"
#include "nodefl/roles/report_repeater.h"
#include "nodefl/seal/pair_keys.h"
#include "nodefl/seal/replay_window.h"
#include "nodefl/seal/seal.h"

namespace nodefl::lumos {

struct TrimPeer {
  uint32_t id = 0;
  // Sealing state taken over from the greedy job (trim_binding.h): the keys
  // live on, so counters and the replay window continue where that job left
  // them (seal.h: counters never repeat while a key lives).
  seal::PairKeys keys;
  seal::ReplayWindow window;
  uint64_t next_counter = 1;
  bool keyed = false;
  bool keep = false;        // this device keeps the edge: the neighbour is a leaf of its tree
  bool peer_keeps = false;  // the neighbour told this device (comparison or reverse echo) that it keeps it
  bool absent = false;      // the server said it takes no part (kTrimAbsent): never searched
  bool unsettled = false;   // kept after an aborted comparison: what the other end does is unknown
  // The current step.
  bool awaiting_echo = false;  // a search went to it (or is due) and is not answered yet
  bool search_due = false;
  bool echo_due = false;
  bool echo_reverse = false;
  uint32_t echo_step = 0;
};

class LumosTrimRole final : public device::Role {
 public:
  struct Stats {
    uint32_t steps = 0;         // drain steps taken part in
    uint32_t roots = 0;         // steps this device started above the threshold
    uint32_t relief = 0;        // reverse echoes received as a root
    uint32_t accepted = 0;      // searches accepted (the device took an edge over)
    uint32_t passed_up = 0;     // reverse echoes passed on to a parent
    uint32_t dropped = 0;       // edges given up after a reverse echo
    uint32_t searches_sent = 0;
    uint32_t echoes_sent = 0;
    uint32_t messages_received = 0;
    uint32_t stale = 0;         // messages of an earlier step
    uint32_t rejected = 0;      // failed to open, malformed, or from a stranger
    uint32_t duplicates = 0;
  };

  // `peers[i].id`: the neighbours, ascending. The peers' keys and
  // orientation are filled in by BindGreedy (trim_binding.h) or, in tests,
  // by the caller followed by Bind().
  LumosTrimRole(uint32_t own_id, Span<TrimPeer> peers);

  // kInvalidArgument for unsorted peers or the device's own id among them.
  Status Init();
  // The peers now hold the starting orientation and keys (greedy_workload:
  // the kept count before the tie drop, for the summary). The next trim job
  // may start; one job per binding, because the keys' counters must never
  // restart.
  void Bind(uint32_t greedy_workload);
  bool bound() const { return bound_; }

  nodefl_wire_JobKind kind() const override { return nodefl_wire_JobKind_JOB_KIND_LUMOS_TRIM; }
  Status OnMessage(const nodefl_wire_Envelope& message, device::DeviceSession& session) override;
  Status OnPoll(uint64_t now_us, device::DeviceSession& session) override;
  void OnSessionRestart(bool resumed) override;

  bool finished() const { return phase_ == Phase::kDone; }
  uint32_t workload() const { return workload_; }
  uint32_t step() const { return step_; }
  const Stats& stats() const { return stats_; }
  Span<const TrimPeer> peers() const { return Span<const TrimPeer>(peers_.data(), peers_.size()); }
  // Neighbours neither kept nor known to be kept by the other endpoint
  // (0 unless something is broken).
  uint32_t Uncovered() const;

 private:
  enum class Phase : uint8_t { kIdle, kReady, kDraining, kReporting, kDone };

  TrimPeer* FindPeer(uint32_t id);
  Status StartJob(const nodefl_wire_Envelope& message);
  void BeginStep(uint32_t step, uint32_t threshold);
  void HandleDelivery(const nodefl_wire_Envelope& message);
  void OnSearch(TrimPeer& from, const TrimMessage& m);
  void OnEcho(TrimPeer& from, const TrimMessage& m);
  void MarkAbsent(TrimPeer& p);
  // Every search of this step answered: report (a root) or answer the parent.
  void SubtreeDone();
  void Keep(TrimPeer& p);
  void LearnPeerKeeps(TrimPeer& p);
  void Drop(TrimPeer& p);
  Status Flush(device::DeviceSession& session);
  Status SendSealed(TrimPeer& peer, const TrimMessage& m, device::DeviceSession& session);
  Status SendOutcome(device::DeviceSession& session);
  Status SendKept(device::DeviceSession& session);
  Status SendSummary(device::DeviceSession& session, uint32_t round);
  Status Report(device::DeviceSession& session, uint32_t round, Status outcome);

  uint32_t own_id_;
  Span<TrimPeer> peers_;
  bool bound_ = false;
  bool used_ = false;  // a job ran on this binding
  uint32_t greedy_workload_ = 0;

  Phase phase_ = Phase::kIdle;
  uint64_t job_id_ = 0;
  uint32_t workload_ = 0;
  // The current drain step.
  uint32_t step_ = 0;
  uint32_t threshold_ = 0;
  bool root_ = false;
  TrimPeer* parent_ = nullptr;
  bool sink_ = false;          // first reached below the threshold: accepts while it stays below
  uint32_t awaiting_ = 0;      // searches of this step not answered yet
  uint32_t dues_ = 0;          // peers with a search or an echo to send
  bool child_reversed_ = false;
  bool subtree_done_ = false;
  uint32_t step_relief_ = 0;
  bool outcome_due_ = false;
  uint32_t outcome_sent_step_ = 0;
  bool outcome_root_ = false;
  bool outcome_still_over_ = false;
  // The report round.
  uint32_t report_round_ = 0;
  bool upload_kept_ = false;
  size_t kept_cursor_ = 0;
  bool summary_sent_ = false;
  roles::ReportRepeater report_;
  Stats stats_;
};

}  // namespace nodefl::lumos
