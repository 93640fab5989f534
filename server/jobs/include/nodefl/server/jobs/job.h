// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Job: what the JobRunner (server/net) drives. A job is a plain,
// single-threaded state machine: the runner feeds it device reports and
// uploads and calls Poll() on a timer; the job answers with the rounds to
// start (JobStart to a set of devices, then public artefacts streamed to each
// of them in order). A job may run heavy math on its own worker threads, but
// every call below happens on the runner's strand.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/server/core/log.h"
#include "nodefl/protocol/envelope.pb.h"

namespace nodefl::server::jobs {

// A public artefact streamed to devices as ChunkHeader + Chunks. Shared: one
// copy serves every connection.
struct Artefact {
  uint32_t kind = 0;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};

// A job-defined record for one device (JobData), sent after anything
// already queued for that device's job stream.
struct DeviceData {
  uint32_t device = 0;
  uint32_t round = 0;
  uint32_t kind = 0;
  std::vector<uint8_t> bytes;
};

struct RoundStart {
  uint32_t round = 0;
  uint32_t deadline_ms = 0;
  std::vector<uint8_t> parameters;  // JobStart.parameters
  std::vector<Artefact> artefacts;  // streamed after the JobStart, in order
  std::vector<uint32_t> devices;
};

class Job {
 public:
  virtual ~Job() = default;

  virtual nodefl_wire_JobKind kind() const = 0;
  // The job begins now.
  virtual std::vector<RoundStart> Begin(uint64_t now_us) = 0;
  // A JobReport from `device` (already authenticated by the connection).
  virtual std::vector<RoundStart> OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                           uint64_t now_us) = 0;
  // A complete, digest-checked upload (chunked transfer) from `device`, or
  // a JobData record (`artefact` = its kind). Jobs that take none count it
  // as a protocol error.
  virtual std::vector<RoundStart> OnUpload(uint32_t device, uint32_t round, uint32_t artefact,
                                           std::vector<uint8_t> bytes, uint64_t now_us) = 0;
  // Deadlines and background work.
  virtual std::vector<RoundStart> Poll(uint64_t now_us) = 0;
  // Records to send to single devices, collected since the last call (the
  // runner calls it after every call above).
  virtual std::vector<DeviceData> TakeData() { return {}; }
  // The runner could not hand `device` a round start or a record: the
  // device is offline. Default: nothing (the round's deadline catches it).
  virtual void OnUndeliverable(uint32_t /*device*/, uint64_t /*now_us*/) {}
  // A record from TakeData could not be handed to its device (offline).
  // Default: as an undeliverable start. A job whose records are advisory
  // (the device does without them) overrides it so that a device between
  // connections is not taken for gone.
  virtual void OnDataUndeliverable(const DeviceData& data, uint64_t now_us) { OnUndeliverable(data.device, now_us); }

  // Continuation after a server restart (docs/reliability.md, "Server
  // restarts"): the runner journals every call above with its time and
  // makes a continuable job again from the same inputs, replaying the
  // journal. A job is continuable when it is a function of those calls
  // alone: salts and seeds through FillJobEntropy (job_entropy.h), no
  // background work whose timing changes its answers. The runner checks
  // each replayed call's answers against the journal and runs the job
  // again from the start when they differ.
  virtual bool continuable() const { return false; }
  // What the next stage of the plan needs from this finished job, as
  // bytes: kept with the next job, which is made from them when it is
  // continued after a restart (the finished job is not kept). Empty:
  // nothing, or the next stage cannot be continued.
  virtual std::vector<uint8_t> HandOff() const { return {}; }

  virtual bool finished() const = 0;
  // Finished and everything it set out to do was done and checked.
  virtual bool succeeded() const = 0;
  // One line for periodic progress output.
  virtual std::string ProgressLine() const = 0;
  // The final summary, as log lines (called once, after finished()).
  virtual void LogSummary(Logger& log, uint64_t job_id) const = 0;
};

}  // namespace nodefl::server::jobs
