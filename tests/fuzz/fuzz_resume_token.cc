// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Resume tokens (server/core/resume_token.h) as a reconnecting device
// presents them in Hello: TokensEqual and the registry's use of it in
// DeviceRegistry::Attach (registry.h). The token is the only thing that
// lets a device take over a session and its un-acknowledged relay
// messages, so a presented token must be accepted exactly when it is the
// token the server issued for that device's session, whatever its length,
// and a refused one must change nothing.
//
// The server's tokens come from a DRBG seeded from system entropy, so no
// seed file can hold one. The input is therefore a difference to the token
// the registry issued in this process: the presented bytes are
// token XOR input over the first 32 bytes, followed by input[32..] as is.
// The presented token is the issued one exactly when the input is 32 zero
// bytes (seed-01); every other input changes, cuts or extends it.
//
// Checked on every input, with device 1 online in a session:
//   - TokensEqual(issued, presented) is true iff presented == issued, and
//     TokensEqual(issued, raw input) agrees with a plain comparison;
//   - Attach(1, presented) goes through TokensEqual (the comparison counter
//     moves by one) and resumes the same session, with the same token,
//     replacing the old connection, iff presented == issued; any other
//     non-empty token is refused with kWrongToken, and the session, the
//     live connection and the token stay as they were; an empty token
//     starts a new session with a fresh token (the device lost its state);
//   - device 2's session refuses device 1's token (each device its own);
//   - an id that was never issued credentials is refused whatever it sends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nodefl/server/core/delivery_target.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/resume_token.h"

namespace {

namespace server = nodefl::server;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Stands in for a connection: records whether the registry asked it to close.
class Target final : public server::DeliveryTarget {
 public:
  void OnRelayReady() override {}
  void RequestClose(server::CloseReason reason) override {
    ++closes;
    last_reason = reason;
  }
  int closes = 0;
  server::CloseReason last_reason = server::CloseReason::kServerShutdown;
};

constexpr uint32_t kDevice = 1;
constexpr uint32_t kOtherDevice = 2;
constexpr uint32_t kUnknownDevice = 99;

struct State {
  std::unique_ptr<server::DeviceRegistry> registry;
  server::ResumeToken token{};        // device 1's current session token
  server::ResumeToken other_token{};  // device 2's
  std::shared_ptr<Target> online;     // device 1's live connection
};

// Device 1 and 2 attach once without a token, as on first contact; the
// tokens the registry hands back are the ones the inputs are measured against.
State& Setup() {
  static State state = [] {
    State s;
    std::string error;
    s.registry = server::DeviceRegistry::Create({kDevice, kOtherDevice}, {}, &error);
    Check(s.registry != nullptr);
    s.online = std::make_shared<Target>();
    const server::AttachResult first = s.registry->Attach(kDevice, {}, s.online);
    Check(first.ok() && !first.resumed && first.session == 1);
    s.token = first.token;
    const server::AttachResult other = s.registry->Attach(kOtherDevice, {}, std::make_shared<Target>());
    Check(other.ok());
    s.other_token = other.token;
    Check(s.other_token != s.token);  // 2^-256 chance of a false alarm
    return s;
  }();
  return state;
}

bool SameBytes(const server::ResumeToken& token, std::span<const uint8_t> bytes) {
  return bytes.size() == token.size() && std::memcmp(bytes.data(), token.data(), token.size()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  State& s = Setup();

  // The presented token: the issued one XOR the input, then the input's tail.
  std::vector<uint8_t> presented(data, data + size);
  for (size_t i = 0; i < presented.size() && i < s.token.size(); ++i) presented[i] ^= s.token[i];
  const std::span<const uint8_t> bytes(presented);
  const bool exact = SameBytes(s.token, bytes);
  bool zero_delta = size == server::kResumeTokenBytes;
  for (size_t i = 0; i < size && zero_delta; ++i) zero_delta = data[i] == 0;
  Check(exact == zero_delta);  // the encoding above is what this target relies on

  Check(server::TokensEqual(s.token, bytes) == exact);
  Check(server::TokensEqual(s.token, std::span<const uint8_t>(data, size)) ==
        SameBytes(s.token, std::span<const uint8_t>(data, size)));

  // Device 1, online in session `session`.
  const uint64_t session = s.registry->CurrentSession(kDevice).value_or(0);
  Check(session != 0 && s.registry->CurrentTarget(kDevice) == s.online);
  const uint64_t comparisons = server::TokenComparisonCount();
  auto incoming = std::make_shared<Target>();
  const server::AttachResult r = s.registry->Attach(kDevice, bytes, incoming);
  if (bytes.empty()) {
    // No token: the device starts over in a new session with a new token.
    Check(server::TokenComparisonCount() == comparisons);
    Check(r.ok() && !r.resumed && r.session == session + 1 && r.replaced_previous);
    Check(r.token != s.token);  // 2^-256 chance of a false alarm
    Check(s.online->closes == 1 && s.online->last_reason == server::CloseReason::kReplaced);
    s.token = r.token;
    s.online = incoming;
  } else if (exact) {
    Check(server::TokenComparisonCount() == comparisons + 1);
    Check(r.ok() && r.resumed && r.session == session && r.token == s.token && r.replaced_previous);
    Check(s.online->closes == 1 && s.online->last_reason == server::CloseReason::kReplaced);
    s.online = incoming;
  } else {
    Check(server::TokenComparisonCount() == comparisons + 1);
    Check(!r.ok() && r.status == server::AttachStatus::kWrongToken && !r.resumed);
    Check(r.token == server::ResumeToken{});  // a refusal must not leak the real token
    Check(s.online->closes == 0 && incoming->closes == 0);
  }
  Check(s.registry->CurrentSession(kDevice) == (bytes.empty() ? session + 1 : session));
  Check(s.registry->CurrentTarget(kDevice) == s.online);

  // Device 2 has a session of its own: device 1's token (or anything made
  // from it) only opens it if it happens to be device 2's token.
  if (!bytes.empty()) {
    const uint64_t other_session = s.registry->CurrentSession(kOtherDevice).value_or(0);
    const server::AttachResult other = s.registry->Attach(kOtherDevice, bytes, std::make_shared<Target>());
    Check(other.ok() == SameBytes(s.other_token, bytes));
    Check(other.ok() || other.status == server::AttachStatus::kWrongToken);
    Check(s.registry->CurrentSession(kOtherDevice) == other_session);
  }

  // Never issued credentials: refused before any token is looked at.
  const server::AttachResult unknown = s.registry->Attach(kUnknownDevice, bytes, std::make_shared<Target>());
  Check(!unknown.ok() && unknown.status == server::AttachStatus::kUnknownDevice);
  return 0;
}
