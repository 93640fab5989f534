// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_channel.h"

#include <utility>

namespace nodefl::server::jobs {

void KcagcChannel::Post(KcagcRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    queue_.push_back(Entry{std::move(request), false});
  }
  queued_.notify_all();
}

KcagcAnswer KcagcChannel::Ask(KcagcRequest request) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return KcagcAnswer{close_status_, {}, {}};
  queue_.push_back(Entry{std::move(request), true});
  asking_ = true;
  has_answer_ = false;
  queued_.notify_all();
  answered_.wait(lock, [this] { return has_answer_ || closed_; });
  asking_ = false;
  if (!has_answer_) return KcagcAnswer{close_status_, {}, {}};
  has_answer_ = false;
  return std::move(answer_);
}

bool KcagcChannel::Take(KcagcRequest* request, bool* wants_answer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || queue_.empty()) return false;
  *request = std::move(queue_.front().request);
  *wants_answer = queue_.front().wants_answer;
  queue_.pop_front();
  return true;
}

void KcagcChannel::Answer(KcagcAnswer answer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!asking_ || closed_) return;
    answer_ = std::move(answer);
    has_answer_ = true;
  }
  answered_.notify_all();
}

bool KcagcChannel::WaitForRequest(std::chrono::microseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return queued_.wait_for(lock, limit, [this] { return !queue_.empty() || closed_; }) && !queue_.empty();
}

void KcagcChannel::Close(Status why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    close_status_ = why.ok() ? Status::Cancelled() : why;
    queue_.clear();
  }
  answered_.notify_all();
  queued_.notify_all();
}

bool KcagcChannel::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

}  // namespace nodefl::server::jobs
