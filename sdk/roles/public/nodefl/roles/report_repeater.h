// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ReportRepeater: the latest JobReport a role sent, kept so that it can be
// sent again when the server may not have it: after the session restarted
// (the report may have died with the old connection), or when a JobStart
// repeats a round the role has already reported (the server asks again).
// The report's counters are read fresh when it is re-sent; only its round
// and outcome are remembered.
#pragma once

#include <cstdint>

#include "nodefl/core/status.h"

namespace nodefl::roles {

class ReportRepeater {
 public:
  // A new job: nothing reported yet.
  void Reset() { *this = ReportRepeater(); }

  // The role sent its report for `round` with `outcome`.
  void Sent(uint32_t round, Status outcome) {
    round_ = round;
    outcome_ = outcome;
  }

  // 0 before the first report of the job.
  uint32_t last_round() const { return round_; }

  // The session restarted: repeat the latest report, if any.
  void OnSessionRestart() {
    if (round_ != 0) due_ = true;
  }
  // A JobStart repeated `round`: repeat its report if it is the latest.
  void OnRepeatedRound(uint32_t round) {
    if (round_ != 0 && round_ == round) due_ = true;
  }

  bool due() const { return due_; }

  // When a repeat is due and `can_send`, calls send(round, outcome) once.
  template <typename SendFn>
  [[nodiscard]] Status Flush(bool can_send, SendFn&& send) {
    if (!due_ || !can_send) return Status::Ok();
    due_ = false;
    return send(round_, outcome_);
  }

 private:
  uint32_t round_ = 0;
  Status outcome_;
  bool due_ = false;
};

}  // namespace nodefl::roles
