// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/registry.h"

#include <utility>

namespace nodefl::server {
namespace {

int64_t NowTicks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

constexpr int64_t kNeverSeen = INT64_MIN;

}  // namespace

// Per-device state. Fields above the atomics are guarded by the stripe lock.
struct DeviceRegistry::Slot {
  std::shared_ptr<DeliveryTarget> target;  // non-null while online
  uint64_t generation = 0;
  uint64_t session = 0;  // 0: no session yet
  ResumeToken token{};   // valid when session != 0
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> messages_in{0};
  std::atomic<uint64_t> messages_out{0};
  std::atomic<int64_t> last_seen{kNeverSeen};
};

std::string_view AttachStatusName(AttachStatus status) {
  switch (status) {
    case AttachStatus::kAttached: return "attached";
    case AttachStatus::kUnknownDevice: return "unknown_device";
    case AttachStatus::kWrongToken: return "wrong_token";
    case AttachStatus::kServerFull: return "server_full";
    case AttachStatus::kNoTarget: return "no_target";
    case AttachStatus::kTokenGenerationFailed: return "token_generation_failed";
  }
  return "unknown";
}

std::unique_ptr<DeviceRegistry> DeviceRegistry::Create(std::vector<uint32_t> device_ids,
                                                       const RegistryOptions& options,
                                                       std::string* error) {
  std::unique_ptr<TokenGenerator> tokens = TokenGenerator::Create(options.token_personalization, error);
  if (tokens == nullptr) return nullptr;
  return std::unique_ptr<DeviceRegistry>(
      new DeviceRegistry(std::move(device_ids), options, std::move(tokens)));
}

DeviceRegistry::DeviceRegistry(std::vector<uint32_t> device_ids, const RegistryOptions& options,
                               std::unique_ptr<TokenGenerator> tokens)
    : index_(std::move(device_ids)),
      max_online_(options.max_online),
      tokens_(std::move(tokens)),
      session_log_(options.session_log),
      slots_(new Slot[index_.size()]) {}

DeviceRegistry::~DeviceRegistry() = default;

bool DeviceRegistry::TryReserveOnline() {
  uint64_t current = online_.load(std::memory_order_relaxed);
  while (current < max_online_) {
    if (online_.compare_exchange_weak(current, current + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

AttachResult DeviceRegistry::Attach(uint32_t device_id, std::span<const uint8_t> presented_token,
                                    std::shared_ptr<DeliveryTarget> target) {
  AttachResult result;
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) {
    refused_unknown_.fetch_add(1, std::memory_order_relaxed);
    result.status = AttachStatus::kUnknownDevice;
    return result;
  }
  if (target == nullptr) {
    result.status = AttachStatus::kNoTarget;
    return result;
  }
  // Drawn before locking (it may be unused on resume) so that the DRBG's own
  // lock is never taken inside a stripe lock.
  ResumeToken fresh_token{};
  if (!tokens_->Generate(&fresh_token)) {
    result.status = AttachStatus::kTokenGenerationFailed;
    return result;
  }

  std::shared_ptr<DeliveryTarget> replaced;
  {
    Slot& slot = slots_[*slot_index];
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    const bool has_session = slot.session != 0;
    bool resume = false;
    if (has_session && !presented_token.empty()) {
      resume = TokensEqual(slot.token, presented_token);
      if (!resume) {
        refused_token_.fetch_add(1, std::memory_order_relaxed);
        result.status = AttachStatus::kWrongToken;
        return result;
      }
    }
    if (slot.target == nullptr && !TryReserveOnline()) {
      refused_full_.fetch_add(1, std::memory_order_relaxed);
      result.status = AttachStatus::kServerFull;
      return result;
    }
    if (!resume) {
      if (has_session) sessions_reset_.fetch_add(1, std::memory_order_relaxed);
      new_sessions_.fetch_add(1, std::memory_order_relaxed);
      slot.session += 1;
      slot.token = fresh_token;
    }
    replaced = std::exchange(slot.target, std::move(target));
    slot.generation += 1;
    slot.last_seen.store(NowTicks(), std::memory_order_relaxed);

    result.status = AttachStatus::kAttached;
    result.resumed = resume;
    result.replaced_previous = replaced != nullptr;
    result.token = slot.token;
    result.generation = slot.generation;
    result.session = slot.session;
  }
  if (!result.resumed && session_log_ != nullptr &&
      !session_log_->SaveSession(device_id, result.session, result.token, &result.save_error)) {
    result.not_saved = true;
    sessions_not_saved_.fetch_add(1, std::memory_order_relaxed);
  }
  attaches_.fetch_add(1, std::memory_order_relaxed);
  if (result.resumed) resumes_.fetch_add(1, std::memory_order_relaxed);
  if (replaced != nullptr) {
    replaced_.fetch_add(1, std::memory_order_relaxed);
    replaced->RequestClose(CloseReason::kReplaced);
  }
  return result;
}

bool DeviceRegistry::RestoreSession(uint32_t device_id, uint64_t session, const ResumeToken& token) {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index || session == 0) return false;
  Slot& slot = slots_[*slot_index];
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  if (session > slot.session) {
    slot.session = session;
    slot.token = token;
  }
  sessions_restored_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool DeviceRegistry::Detach(uint32_t device_id, uint64_t generation) {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return false;
  std::shared_ptr<DeliveryTarget> released;  // destroyed after the lock is released
  {
    Slot& slot = slots_[*slot_index];
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    if (slot.generation != generation || slot.target == nullptr) return false;
    released = std::move(slot.target);
    slot.target = nullptr;
    slot.last_seen.store(NowTicks(), std::memory_order_relaxed);
  }
  online_.fetch_sub(1, std::memory_order_relaxed);
  detaches_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::optional<uint64_t> DeviceRegistry::CurrentSession(uint32_t device_id) const {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return std::nullopt;
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  return slots_[*slot_index].session;
}

std::shared_ptr<DeliveryTarget> DeviceRegistry::CurrentTarget(uint32_t device_id) const {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return nullptr;
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  return slots_[*slot_index].target;
}

void DeviceRegistry::RecordInbound(uint32_t device_id, uint64_t bytes) {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return;
  Slot& slot = slots_[*slot_index];
  slot.bytes_in.fetch_add(bytes, std::memory_order_relaxed);
  slot.messages_in.fetch_add(1, std::memory_order_relaxed);
  slot.last_seen.store(NowTicks(), std::memory_order_relaxed);
}

void DeviceRegistry::RecordOutbound(uint32_t device_id, uint64_t bytes) {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return;
  Slot& slot = slots_[*slot_index];
  slot.bytes_out.fetch_add(bytes, std::memory_order_relaxed);
  slot.messages_out.fetch_add(1, std::memory_order_relaxed);
}

size_t DeviceRegistry::RequestCloseAll(CloseReason reason) {
  std::vector<std::shared_ptr<DeliveryTarget>> targets;
  for (size_t stripe = 0; stripe < kStripes; ++stripe) {
    std::lock_guard<std::mutex> lock(stripes_[stripe].mutex);
    for (size_t i = stripe; i < index_.size(); i += kStripes) {
      if (slots_[i].target != nullptr) targets.push_back(slots_[i].target);
    }
  }
  for (const auto& target : targets) target->RequestClose(reason);
  return targets.size();
}

std::optional<DeviceSnapshot> DeviceRegistry::Snapshot(uint32_t device_id) const {
  const std::optional<size_t> slot_index = index_.SlotOf(device_id);
  if (!slot_index) return std::nullopt;
  const Slot& slot = slots_[*slot_index];
  DeviceSnapshot snapshot;
  snapshot.device_id = device_id;
  {
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    snapshot.online = slot.target != nullptr;
    snapshot.generation = slot.generation;
    snapshot.session = slot.session;
  }
  snapshot.bytes_in = slot.bytes_in.load(std::memory_order_relaxed);
  snapshot.bytes_out = slot.bytes_out.load(std::memory_order_relaxed);
  snapshot.messages_in = slot.messages_in.load(std::memory_order_relaxed);
  snapshot.messages_out = slot.messages_out.load(std::memory_order_relaxed);
  const int64_t seen = slot.last_seen.load(std::memory_order_relaxed);
  if (seen != kNeverSeen) {
    snapshot.last_seen =
        std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(seen));
  }
  return snapshot;
}

RegistryStats DeviceRegistry::Stats() const {
  const auto get = [](const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  RegistryStats stats;
  stats.known_devices = index_.size();
  stats.online_devices = get(online_);
  stats.attaches = get(attaches_);
  stats.resumes = get(resumes_);
  stats.new_sessions = get(new_sessions_);
  stats.sessions_reset = get(sessions_reset_);
  stats.replaced_connections = get(replaced_);
  stats.detaches = get(detaches_);
  stats.refused_unknown_device = get(refused_unknown_);
  stats.refused_wrong_token = get(refused_token_);
  stats.refused_server_full = get(refused_full_);
  stats.sessions_restored = get(sessions_restored_);
  stats.sessions_not_saved = get(sessions_not_saved_);
  return stats;
}

size_t DeviceRegistry::BytesPerDevice() { return sizeof(Slot) + sizeof(uint32_t); }

}  // namespace nodefl::server
