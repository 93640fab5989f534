// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceRegistry: which devices may connect, which are connected, through
// which connection, and in which session. It knows device ids and nothing
// else about a device (never its edges or features).
//
// Sessions and resume tokens. A session is what a device continues across
// reconnects; its resume token (32 random bytes, stable for the whole
// session) comes back in Welcome. Attach(device, presented_token, target):
//
//   registry holds        device presents       outcome
//   no session yet        nothing or a token    new session, resumed=false
//                                               (a token the server never
//                                               issued, e.g. before a server
//                                               restart, is not an error)
//   a session             the matching token    same session, resumed=true
//   a session             a different token     refused: kWrongToken; the
//                                               live connection, if any,
//                                               stays up
//   a session             nothing (empty)       new session, resumed=false:
//                                               the device says it lost its
//                                               state, so its un-acked relay
//                                               messages are dropped (the
//                                               relay does it when it sees
//                                               the new session number)
//
// So a device that lost its token reconnects with an empty token and starts
// over; a device refused with kWrongToken should do the same. Tokens are
// compared with TokensEqual (constant time). The token is not rotated on
// resume: if a Welcome is lost in transit the device's token still works.
//
// Connections. Every successful Attach gets a new `generation` (per device,
// increasing). If the device was already connected, the old connection is
// replaced: routing switches to the new target at once and the old target
// gets RequestClose(kReplaced) after the registry's lock is released.
// Detach(device, generation) only detaches if that generation is current,
// so a replaced connection closing late cannot knock out its successor.
//
// Restarts. With a SessionLog (RegistryOptions::session_log: the server's
// state store, nodefl/server/store/state_store.h) every new session is
// written there before Attach returns, that is before the Welcome that
// hands its token out; a restarted server calls RestoreSession for each
// before it accepts connections, so a device presenting its token resumes
// its session (resumed=true). A write that fails is counted
// (sessions_not_saved) and the attach goes on: that device starts a new
// session after a restart, as if it had lost its token.
//
// Threading. All methods are thread-safe. Per-device state sits in flat
// arrays guarded by 64 striped mutexes (device slot % 64); counters and
// last-seen are relaxed atomics updated without locks. Critical sections
// copy a few words; DeliveryTarget callbacks, token generation and the
// destruction of released targets all happen outside the lock. The registry
// never calls the relay and never holds its lock while another module's
// lock is taken.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nodefl/server/core/delivery_target.h"
#include "nodefl/server/core/device_ids.h"
#include "nodefl/server/core/resume_token.h"

namespace nodefl::server {

enum class AttachStatus : uint8_t {
  kAttached,
  kUnknownDevice,          // id was never issued credentials
  kWrongToken,             // a session exists and the token does not match it
  kServerFull,             // max_online devices already connected
  kNoTarget,               // programming error: null target
  kTokenGenerationFailed,  // DRBG failure; try again later
};

std::string_view AttachStatusName(AttachStatus status);

struct AttachResult {
  AttachStatus status = AttachStatus::kUnknownDevice;
  bool resumed = false;  // same session as before: un-acked relay messages follow
  bool replaced_previous = false;  // an older connection was told to close
  ResumeToken token{};   // for Welcome.resume_token
  uint64_t generation = 0;  // this connection; pass to Detach/Relay::BeginSession/Take/EndSession
  uint64_t session = 0;     // session number (1, 2, ... per device); pass to Relay::BeginSession

  bool ok() const { return status == AttachStatus::kAttached; }
  // A new session the SessionLog could not write (the reason in
  // save_error): the device starts afresh if the server restarts.
  bool not_saved = false;
  std::string save_error;
};

struct DeviceSnapshot {
  uint32_t device_id = 0;
  bool online = false;
  uint64_t generation = 0;
  uint64_t session = 0;  // 0: never attached since the server started
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t messages_in = 0;
  uint64_t messages_out = 0;
  // Last attach, detach or inbound message; nullopt if never seen.
  std::optional<std::chrono::steady_clock::time_point> last_seen;
};

struct RegistryStats {
  uint64_t known_devices = 0;
  uint64_t online_devices = 0;
  uint64_t attaches = 0;  // successful, including resumes
  uint64_t resumes = 0;
  uint64_t new_sessions = 0;
  uint64_t sessions_reset = 0;  // new session replacing an existing one (token lost)
  uint64_t replaced_connections = 0;
  uint64_t detaches = 0;
  uint64_t refused_unknown_device = 0;
  uint64_t refused_wrong_token = 0;
  uint64_t refused_server_full = 0;
  uint64_t sessions_restored = 0;   // RestoreSession, at start-up
  uint64_t sessions_not_saved = 0;  // the SessionLog refused a new session
};

// Where new sessions are written so that they outlive the server process.
// Called outside the registry's locks, from the attaching connection.
class SessionLog {
 public:
  virtual ~SessionLog() = default;
  virtual bool SaveSession(uint32_t device_id, uint64_t session, const ResumeToken& token, std::string* error) = 0;
};

struct RegistryOptions {
  uint32_t max_online = 10000;  // ServerConfig::max_devices
  std::string token_personalization = "nodefl-server resume tokens";
  SessionLog* session_log = nullptr;  // not owned; nullptr: sessions end with the process
};

class DeviceRegistry {
 public:
  // nullptr with `*error` set if the token generator cannot be seeded.
  static std::unique_ptr<DeviceRegistry> Create(std::vector<uint32_t> device_ids,
                                                const RegistryOptions& options, std::string* error);
  ~DeviceRegistry();
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;

  // See the table above. `presented_token` is Hello.resume_token (may be empty).
  AttachResult Attach(uint32_t device_id, std::span<const uint8_t> presented_token,
                      std::shared_ptr<DeliveryTarget> target);

  // Before the first Attach: a session a previous server process handed
  // out (ServerStateStore::LoadSessions). False for an unknown device or a
  // session number of 0; a lower number than the one held changes nothing.
  bool RestoreSession(uint32_t device_id, uint64_t session, const ResumeToken& token);

  // Marks the device offline if `generation` is its current connection.
  // Returns false (and changes nothing) for a replaced or unknown connection.
  bool Detach(uint32_t device_id, uint64_t generation);

  // Session number of a known device (0 = never attached), nullopt if unknown.
  std::optional<uint64_t> CurrentSession(uint32_t device_id) const;

  // The live connection of a device, or nullptr if offline/unknown.
  std::shared_ptr<DeliveryTarget> CurrentTarget(uint32_t device_id) const;

  // Traffic counters for one device (lock-free; unknown ids ignored).
  // Inbound traffic also refreshes last-seen.
  void RecordInbound(uint32_t device_id, uint64_t bytes);
  void RecordOutbound(uint32_t device_id, uint64_t bytes);

  // Sends RequestClose(reason) to every connected device (outside locks).
  // Returns how many were asked. Does not detach them.
  size_t RequestCloseAll(CloseReason reason);

  bool IsKnown(uint32_t device_id) const { return index_.SlotOf(device_id).has_value(); }
  const DeviceIndex& index() const { return index_; }
  std::optional<DeviceSnapshot> Snapshot(uint32_t device_id) const;
  RegistryStats Stats() const;

  // Memory the registry holds per known device while it is idle (offline or
  // online, excluding the connection object itself).
  static size_t BytesPerDevice();

 private:
  struct Slot;
  struct alignas(64) Stripe {
    std::mutex mutex;
  };
  static constexpr size_t kStripes = 64;

  DeviceRegistry(std::vector<uint32_t> device_ids, const RegistryOptions& options,
                 std::unique_ptr<TokenGenerator> tokens);
  std::mutex& StripeFor(size_t slot) const { return stripes_[slot % kStripes].mutex; }
  bool TryReserveOnline();

  const DeviceIndex index_;
  const uint32_t max_online_;
  std::unique_ptr<TokenGenerator> tokens_;
  SessionLog* const session_log_;
  std::unique_ptr<Slot[]> slots_;
  mutable std::array<Stripe, kStripes> stripes_;

  std::atomic<uint64_t> online_{0};
  std::atomic<uint64_t> attaches_{0};
  std::atomic<uint64_t> resumes_{0};
  std::atomic<uint64_t> new_sessions_{0};
  std::atomic<uint64_t> sessions_reset_{0};
  std::atomic<uint64_t> replaced_{0};
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> refused_unknown_{0};
  std::atomic<uint64_t> refused_token_{0};
  std::atomic<uint64_t> refused_full_{0};
  std::atomic<uint64_t> sessions_restored_{0};
  std::atomic<uint64_t> sessions_not_saved_{0};
};

}  // namespace nodefl::server
