// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/job_keys.h"

#include <algorithm>

namespace nodefl::server {

void JobKeyTable::BeginJob(uint64_t job_id) {
  std::lock_guard lock(mutex_);
  job_id_ = job_id;
  keys_.clear();
}

void JobKeyTable::EndJob(uint64_t job_id) {
  std::lock_guard lock(mutex_);
  if (job_id != job_id_) return;
  job_id_ = 0;
  keys_.clear();
}

AnnounceResult JobKeyTable::Announce(uint32_t device, uint64_t job_id, std::span<const uint8_t, kJobKeyBytes> key) {
  std::lock_guard lock(mutex_);
  if (job_id_ == 0 || job_id != job_id_) return AnnounceResult::kNotCurrentJob;
  JobKey stored;
  std::copy(key.begin(), key.end(), stored.begin());
  const auto [it, inserted] = keys_.insert_or_assign(device, stored);
  return inserted ? AnnounceResult::kStored : AnnounceResult::kReplaced;
}

JobKeyLookup JobKeyTable::Find(uint32_t device, uint64_t job_id, JobKey* out) const {
  std::lock_guard lock(mutex_);
  if (job_id_ == 0 || job_id != job_id_) return JobKeyLookup::kNoJob;
  const auto it = keys_.find(device);
  if (it == keys_.end()) return JobKeyLookup::kPending;
  *out = it->second;
  return JobKeyLookup::kFound;
}

uint64_t JobKeyTable::current_job() const {
  std::lock_guard lock(mutex_);
  return job_id_;
}

size_t JobKeyTable::size() const {
  std::lock_guard lock(mutex_);
  return keys_.size();
}

}  // namespace nodefl::server
