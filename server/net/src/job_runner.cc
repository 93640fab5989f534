// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/job_runner.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <random>

#include "nodefl/server/net/connection.h"
#include "nodefl/server/net/process_limits.h"

namespace nodefl::server::net {

namespace asio = boost::asio;

namespace {
constexpr auto kTick = std::chrono::milliseconds(200);
constexpr auto kProgressEvery = std::chrono::seconds(2);
constexpr size_t kSaltBytes = 16;
}  // namespace

JobRunner::JobRunner(asio::io_context& io, ServerContext& context, std::vector<uint32_t> known_devices,
                     std::function<void(bool)> on_finished, std::function<void()> on_all_done)
    : ctx_(context),
      strand_(asio::make_strand(io)),
      timer_(strand_),
      known_(std::move(known_devices)),
      on_finished_(std::move(on_finished)),
      on_all_done_(std::move(on_all_done)) {}

uint64_t JobRunner::NowMicros() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count());
}

void JobRunner::Start() { asio::co_spawn(strand_, Loop(), asio::detached); }

void JobRunner::Stop() {
  asio::post(strand_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

asio::awaitable<void> JobRunner::Loop() {
  while (!stopped_) {
    Tick();
    timer_.expires_after(kTick);
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void JobRunner::OnJobReport(uint32_t device, uint64_t job_id, uint32_t round,
                            const nodefl_wire_JobReport& report) {
  asio::post(strand_, [this, device, job_id, round, report] {
    if (!job_ || job_->finished() || job_id != current_job_id_) {
      ctx_.log->Warn("job_report_ignored", {{"device", device}, {"job", job_id}, {"round", round}});
      return;
    }
    Dispatch(job_->OnReport(device, round, report, NowMicros()));
    if (job_->finished()) FinishJob();
  });
}

void JobRunner::Tick() {
  if (job_) {
    if (!job_->finished()) {
      Dispatch(job_->Poll(NowMicros()));
      if (job_->finished()) {
        FinishJob();
      } else if (Clock::now() - last_progress_ >= kProgressEvery) {
        last_progress_ = Clock::now();
        ctx_.log->Info("job_progress", {{"job", current_job_id_},
                                        {"state", job_->ProgressLine()},
                                        {"relay_sent", ctx_.counters.relay_sent.load()},
                                        {"relay_delivered", ctx_.counters.relay_delivered.load()}});
      }
    }
    return;
  }
  if (started_) return;
  std::vector<uint32_t> online;
  for (uint32_t id : known_) {
    const auto snap = ctx_.registry->Snapshot(id);
    if (snap && snap->online) online.push_back(id);
  }
  if (!online.empty() && !first_online_) first_online_ = Clock::now();
  const size_t quorum = ctx_.config.job_quorum == 0 ? known_.size() : ctx_.config.job_quorum;
  const bool waited = first_online_ && ctx_.config.job_wait_ms > 0 &&
                      Clock::now() - *first_online_ >= std::chrono::milliseconds(ctx_.config.job_wait_ms);
  if (Clock::now() - last_progress_ >= kProgressEvery) {
    last_progress_ = Clock::now();
    ctx_.log->Info("job_waiting", {{"job", ctx_.config.job}, {"online", online.size()}, {"quorum", quorum}});
  }
  if (online.size() >= quorum || (waited && !online.empty())) StartJob(std::move(online));
}

void JobRunner::StartJob(std::vector<uint32_t> participants) {
  started_ = true;
  const uint64_t job_id = current_job_id_ = next_job_id_++;
  // A fresh public salt per job makes the devices' job keys unique (see
  // sdk/seal/public/nodefl/seal/job_keys.h). It needs to be unpredictable
  // only in the sense of never repeating; std::random_device reads the OS.
  std::random_device rd;
  salt_.resize(kSaltBytes);
  for (auto& b : salt_) b = static_cast<uint8_t>(rd());
  // Then the load knobs (sdk/roles/public/nodefl/roles/neighbour_echo.h).
  for (uint32_t v : {ctx_.config.job_messages_per_edge, ctx_.config.job_payload_bytes}) {
    for (int i = 0; i < 4; ++i) salt_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  jobs::NeighbourEchoJob::Options options;
  options.job_id = job_id;
  options.round1_deadline_ms = ctx_.config.job_round_deadline_ms;
  options.round2_deadline_ms = ctx_.config.job_round_deadline_ms;
  job_.emplace(options, std::move(participants));
  ctx_.log->Info("job_started", {{"job", job_id},
                                 {"kind", ctx_.config.job},
                                 {"messages_per_edge", ctx_.config.job_messages_per_edge},
                                 {"payload_bytes", ctx_.config.job_payload_bytes},
                                 {"rss_kib", CurrentRssKiB()},
                                 {"participants", job_->summary().participants}});
  Dispatch(job_->Begin(NowMicros()));
}

void JobRunner::Dispatch(const jobs::NeighbourEchoJob::StartRound& start) {
  if (start.devices.empty()) return;
  // Devices get a slightly shorter deadline than the server enforces, so
  // their final reports arrive before the server gives up on them.
  const uint32_t device_deadline = start.deadline_ms - start.deadline_ms / 10;
  ctx_.log->Info("job_round", {{"job", current_job_id_}, {"round", start.round}, {"devices", start.devices.size()}});
  for (uint32_t device : start.devices) {
    auto target = ctx_.registry->CurrentTarget(device);
    if (!target) continue;  // offline: it will miss the round's deadline
    std::static_pointer_cast<Connection>(target)->SendJobStart(
        current_job_id_, start.round, nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO, device_deadline,
        start.round == 1 ? salt_ : std::vector<uint8_t>{});
  }
}

void JobRunner::FinishJob() {
  const jobs::EchoSummary& s = job_->summary();
  ctx_.log->Info("job_finished", {{"job", current_job_id_},
                                  {"verified", s.verified()},
                                  {"participants", s.participants},
                                  {"keys_ready", s.keys_ready},
                                  {"reported", s.reported},
                                  {"clean_devices", s.clean},
                                  {"expected_messages", s.expected},
                                  {"sent", s.sent},
                                  {"received_verified", s.received},
                                  {"duplicates", s.duplicates},
                                  {"rejected", s.rejected},
                                  {"missed_round1", s.missed_round1.size()},
                                  {"missed_round2", s.missed_round2.size()},
                                  {"unclean_devices", s.unclean.size()},
                                  {"seconds_keys", s.seconds_round1},
                                  {"seconds_send", s.seconds_round2},
                                  {"protocol_errors", job_->protocol_errors()}});
  ++jobs_finished_;
  if (on_finished_) on_finished_(s.verified());
  if (ctx_.config.exit_after_jobs != 0 && jobs_finished_ >= ctx_.config.exit_after_jobs && on_all_done_) {
    on_all_done_();
  }
}

}  // namespace nodefl::server::net
