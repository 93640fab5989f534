// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/neighbour_echo_runner_job.h"

#include <algorithm>
#include <utility>

#include "nodefl/core/assert.h"
#include "nodefl/protocol/echo/job_format.h"

namespace nodefl::server::jobs {

NeighbourEchoRunnerJob::NeighbourEchoRunnerJob(const NeighbourEchoJob::Options& options,
                                               std::vector<uint32_t> participants, std::vector<uint8_t> salt,
                                               uint32_t messages_per_edge, uint32_t payload_bytes)
    : job_(options, std::move(participants)) {
  // The catalog validated the knobs against the same contract
  // (protocol/echo/job_format.h); a salt of another size is a caller bug.
  echo::EchoParameters params;
  NODEFL_CHECK(salt.size() == sizeof(params.salt));
  std::copy(salt.begin(), salt.end(), params.salt);
  params.messages_per_edge = messages_per_edge;
  params.payload_bytes = payload_bytes;
  parameters_.resize(echo::kEchoParametersBytes);
  const Result<size_t> encoded = echo::EncodeEchoParameters(params, ByteSpan(parameters_.data(), parameters_.size()));
  NODEFL_CHECK(encoded.ok());
}

std::vector<RoundStart> NeighbourEchoRunnerJob::Convert(NeighbourEchoJob::StartRound start) const {
  if (start.devices.empty()) return {};
  RoundStart r;
  r.round = start.round;
  r.deadline_ms = start.deadline_ms;
  if (start.round == 1) r.parameters = parameters_;
  r.devices = std::move(start.devices);
  std::vector<RoundStart> out;
  out.push_back(std::move(r));
  return out;
}

std::vector<RoundStart> NeighbourEchoRunnerJob::Begin(uint64_t now_us) { return Convert(job_.Begin(now_us)); }

std::vector<RoundStart> NeighbourEchoRunnerJob::OnReport(uint32_t device, uint32_t round,
                                                         const nodefl_wire_JobReport& report, uint64_t now_us) {
  return Convert(job_.OnReport(device, round, report, now_us));
}

std::vector<RoundStart> NeighbourEchoRunnerJob::OnUpload(uint32_t, uint32_t, uint32_t, std::vector<uint8_t>,
                                                         uint64_t) {
  ++uploads_refused_;  // the echo job takes no uploads
  return {};
}

std::vector<RoundStart> NeighbourEchoRunnerJob::Poll(uint64_t now_us) {
  std::vector<RoundStart> out = std::exchange(pending_, {});
  for (RoundStart& r : Convert(job_.Poll(now_us))) out.push_back(std::move(r));
  return out;
}

void NeighbourEchoRunnerJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  for (RoundStart& r : Convert(job_.OnUnreachable(device, now_us))) pending_.push_back(std::move(r));
}

std::vector<DeviceData> NeighbourEchoRunnerJob::TakeData() {
  const NeighbourEchoJob::PeersGone notice = job_.TakePeersGone();
  std::vector<DeviceData> out;
  for (size_t first = 0; first < notice.gone.size(); first += echo::kEchoMaxPeersGonePerRecord) {
    const size_t count = std::min<size_t>(echo::kEchoMaxPeersGonePerRecord, notice.gone.size() - first);
    std::vector<uint8_t> record(4 + 4 * count);
    const Result<size_t> encoded =
        echo::EncodeEchoPeersGone(Span<const uint32_t>(notice.gone.data() + first, count), ByteSpan(record));
    NODEFL_CHECK(encoded.ok());  // 1 .. the maximum ids, into a buffer of their size
    for (uint32_t device : notice.recipients) out.push_back(DeviceData{device, 2, echo::kEchoRecordPeersGone, record});
  }
  return out;
}

void NeighbourEchoRunnerJob::OnDataUndeliverable(const DeviceData&, uint64_t) { ++gone_notices_undelivered_; }

void NeighbourEchoRunnerJob::LogSummary(Logger& log, uint64_t job_id) const {
  const EchoSummary& s = job_.summary();
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "neighbour-echo"},
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
                            {"abandoned", s.abandoned},
                            {"gone_notices", s.gone_notices},
                            {"gone_notices_undelivered", gone_notices_undelivered_},
                            {"missed_round1", s.missed_round1.size()},
                            {"missed_round2", s.missed_round2.size()},
                            {"unclean_devices", s.unclean.size()},
                            {"seconds_keys", s.seconds_round1},
                            {"seconds_send", s.seconds_round2},
                            {"protocol_errors", job_.protocol_errors() + uploads_refused_}});
}

}  // namespace nodefl::server::jobs
