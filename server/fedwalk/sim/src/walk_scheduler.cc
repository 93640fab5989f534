// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "walk_scheduler.h"

#include <algorithm>

#include "parallel_chunks.h"

namespace nodefl::server::fedwalk::walk_sim {

namespace fw = nodefl::fedwalk;

namespace {

struct Worker {
  StepScratch scratch;
  std::string error;
};

}  // namespace

std::string RunWalks(const SimulatedDevices& devices, const std::vector<std::vector<uint32_t>>& graph,
                     const std::vector<uint32_t>& starts, const WalkRunOptions& options, WalkRun* out,
                     std::atomic<uint64_t>* entries_done) {
  const uint32_t n = devices.vertex_count();
  const size_t walks = starts.size();
  const size_t l = options.walk_length;
  if (l < 2 || l > fw::kMaxWalkLength) return "walk length out of range";
  out->ids.assign(walks * 4 * l, 0);
  out->headers.assign(walks, fw::WalkHeader{});
  out->outcomes.assign(walks, fw::WalkOutcome::kComplete);
  out->counters = StepCounters{};
  for (size_t i = 0; i < walks; ++i) {
    // What the start device receives in kStartWalks: the whole length to go.
    out->headers[i].remaining = static_cast<uint16_t>(l);
    out->headers[i].walk_id = static_cast<uint32_t>(i);
  }
  DeviceSteps steps(devices, graph, options.seed, options.oracle_predictor);
  if (std::string error = steps.Seed(); !error.empty()) return error;

  std::vector<Worker> workers(std::max(1u, options.threads));
  for (Worker& w : workers) w.scratch.pool.assign(n, 0);
  std::vector<uint32_t> holder(starts);  // the device holding each walk
  std::vector<uint8_t> finished(walks, 0);
  std::vector<uint32_t> active(walks);
  for (size_t i = 0; i < walks; ++i) active[i] = static_cast<uint32_t>(i);
  std::vector<uint64_t> first(size_t{n} + 1);
  std::vector<uint64_t> fill;
  std::vector<uint32_t> grouped;
  std::vector<uint32_t> busy;
  while (!active.empty()) {
    // Group the active walks by the device holding them, in walk order
    // (a stable counting sort of an ascending list).
    std::fill(first.begin(), first.end(), 0);
    for (uint32_t i : active) ++first[holder[i] + 1];
    busy.clear();
    for (uint32_t v = 0; v < n; ++v) {
      if (first[v + 1] > 0) busy.push_back(v);
      first[v + 1] += first[v];
    }
    fill.assign(first.begin(), first.end() - 1);
    grouped.assign(active.size(), 0);
    for (uint32_t i : active) grouped[fill[holder[i]]++] = i;

    ForChunks(busy.size(), 8, options.threads, [&](unsigned id, size_t begin, size_t end) {
      Worker& worker = workers[id];
      uint64_t entries = 0;
      for (size_t d = begin; d < end && worker.error.empty(); ++d) {
        const uint32_t v = busy[d];
        for (uint64_t g = first[v]; g < first[v + 1]; ++g) {
          const uint32_t i = grouped[g];
          fw::WalkHeader& header = out->headers[i];
          const uint16_t had = header.count;
          StepResult result;
          std::string error;
          if (!steps.Step(v, &header, ByteSpan(out->ids.data() + i * 4 * l, 4 * l), &worker.scratch, &result,
                          &error)) {
            worker.error = "walk " + std::to_string(i) + " at device " + std::to_string(v) + ": " + error;
            break;
          }
          entries += header.count - had;
          if (result.finished) {
            finished[i] = 1;
            out->outcomes[i] = result.outcome;
          } else {
            holder[i] = result.next;
          }
        }
      }
      if (entries_done != nullptr) entries_done->fetch_add(entries);
    });
    for (const Worker& w : workers) {
      if (!w.error.empty()) return w.error;
    }
    std::erase_if(active, [&](uint32_t i) { return finished[i] != 0; });
  }
  for (const Worker& w : workers) out->counters += w.scratch.counters;
  return {};
}

}  // namespace nodefl::server::fedwalk::walk_sim
