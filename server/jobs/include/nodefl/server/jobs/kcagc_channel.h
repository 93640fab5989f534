// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// KcagcChannel: the one hand-off between the kCAGC coordinator, which runs
// on a worker thread and blocks while it waits for the participants, and
// the kcagc job, whose every call runs on the job runner's strand (job.h).
// The worker puts requests in (in order); the job takes them when it is
// called, sends their records, runs their secure aggregation through the
// AggregationService, and answers. Everything shared is behind one mutex;
// nothing else crosses threads.
//
//   worker  Post(request)    queued; no answer wanted (instructions)
//           Ask(request)     queued; blocks until the job answers it or the
//                            channel closes (then the answer is the close's)
//   job     Take(&request)   the next request, in order
//           Answer(answer)   the answer to the Ask taken last
//           Close(status)    every Ask, waiting or to come, fails at once
//
// The job's strand is driven by traffic and a 200 ms tick, and the worker
// is usually microseconds from its next request after an answer, so the job
// may wait for it briefly (WaitForRequest, bounded) instead of a whole tick.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "nodefl/core/status.h"
#include "nodefl/kcagc/types.h"
#include "nodefl/protocol/kcagc/job_format.h"
#include "nodefl/server/jobs/job.h"

namespace nodefl::server::jobs {

struct KcagcRequest {
  std::string what;                  // for messages: "distances (stage 1)"
  std::vector<DeviceData> records;   // instructions, sent first, in order
  // A secure sum: every device in `devices` is told to make `contribute`
  // (the job fills in the aggregation's id), then the aggregation runs over
  // them, `length` words each.
  bool aggregate = false;
  nodefl::kcagc::KcagcContribute contribute;
  std::vector<uint32_t> devices;
  uint32_t length = 0;
  // Protocol 3 line 2: wait for every participant's local clusters.
  bool collect_local_clusters = false;
};

struct KcagcAnswer {
  Status status;
  std::vector<uint32_t> sum;  // the aggregation's sum mod 2^32
  std::vector<nodefl::kcagc::Assignment> local_clusters;  // in participant order
};

class KcagcChannel {
 public:
  // Worker side.
  void Post(KcagcRequest request);
  KcagcAnswer Ask(KcagcRequest request);

  // Job side. `wants_answer`: the request came from Ask (answer it once its
  // work is done, before taking the next).
  bool Take(KcagcRequest* request, bool* wants_answer);
  void Answer(KcagcAnswer answer);
  // Waits at most `limit` for a request to be queued; true if one is.
  bool WaitForRequest(std::chrono::microseconds limit);

  // Either side. The first close's status is kept (not OK).
  void Close(Status why);
  bool closed() const;

 private:
  struct Entry {
    KcagcRequest request;
    bool wants_answer = false;
  };

  mutable std::mutex mutex_;
  std::condition_variable answered_;  // the worker waits on it
  std::condition_variable queued_;    // the job waits on it (briefly)
  std::deque<Entry> queue_;
  bool asking_ = false;     // an Ask is queued or being worked on
  bool has_answer_ = false;
  KcagcAnswer answer_;
  bool closed_ = false;
  Status close_status_;
};

}  // namespace nodefl::server::jobs
