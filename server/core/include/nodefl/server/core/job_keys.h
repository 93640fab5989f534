// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// JobKeyTable: the ephemeral job keys devices announce (wire JobKey,
// sdk/seal/job_keys.h) for the job the server is running, so that the
// server can hand each one to the device's peers with its certificate
// (PeerCertificate.job_key). The keys are public; the table only stores
// and forwards them. Keys are kept for the current job only: a new job (or
// its end) forgets them all, so a device's key of an earlier job is never
// handed out again.
//
// Thread-safe: connections announce and look up from their own strands,
// the job runner begins and ends jobs.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>

namespace nodefl::server {

inline constexpr size_t kJobKeyBytes = 65;  // SEC1 uncompressed P-256 point
using JobKey = std::array<uint8_t, kJobKeyBytes>;

enum class AnnounceResult {
  kStored,         // first key of this device for the job
  kReplaced,       // the device announced again (a restart: a new key) or repeated itself
  kNotCurrentJob,  // no job running, or another one: ignored
};

enum class JobKeyLookup {
  kFound,
  kPending,  // the job runs but the device has not announced (yet)
  kNoJob,    // `job_id` is not the job running: there will be no key
};

class JobKeyTable {
 public:
  // Keys for `job_id` are accepted from now on; all others are forgotten.
  void BeginJob(uint64_t job_id);
  // Forgets the keys of `job_id` if it is the current job; none accepted.
  void EndJob(uint64_t job_id);

  AnnounceResult Announce(uint32_t device, uint64_t job_id, std::span<const uint8_t, kJobKeyBytes> key);
  JobKeyLookup Find(uint32_t device, uint64_t job_id, JobKey* out) const;

  uint64_t current_job() const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  uint64_t job_id_ = 0;  // 0: no job
  std::unordered_map<uint32_t, JobKey> keys_;
};

}  // namespace nodefl::server
