// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A DeliveryTarget for the server-core tests: counts wake-ups and close
// requests instead of touching a socket.
#pragma once

#include <atomic>
#include <memory>

#include "nodefl/server/core/delivery_target.h"

namespace nodefl::server::testing {

class RecordingTarget : public DeliveryTarget {
 public:
  void OnRelayReady() override { wakeups.fetch_add(1); }
  void RequestClose(CloseReason reason) override {
    last_close_reason.store(reason);
    close_requests.fetch_add(1);
  }

  std::atomic<int> wakeups{0};
  std::atomic<int> close_requests{0};
  std::atomic<CloseReason> last_close_reason{CloseReason::kServerShutdown};
};

inline std::shared_ptr<RecordingTarget> MakeTarget() { return std::make_shared<RecordingTarget>(); }

}  // namespace nodefl::server::testing
