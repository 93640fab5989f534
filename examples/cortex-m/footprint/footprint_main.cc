// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Minimal firmware images for the footprint table (docs/porting.md,
// "Cortex-M (bare metal)"): each links the board and exactly one device
// configuration, so that --gc-sections keeps only what that configuration
// reaches and `arm-none-eabi-size` of the image is its cost. One source,
// one image per macro (examples/cortex-m/CMakeLists.txt):
//   NODEFL_FP_BASELINE  board, start-up, the SDK's log sink: what every image has
//   NODEFL_FP_SESSION   + a DeviceSession (framing, envelope codec, nanopb)
//   NODEFL_FP_HCT       + FedWalk's HCT role (noise, ledger, chunked
//                       transfers): FedWalk's device role without TLS
//   NODEFL_FP_WALK      + the HCT and walk roles (walk messages sealed to
//                       peers: X.509, ECDH, AES-GCM), without TLS
//   NODEFL_FP_COMPARE   + the secure-comparison role (base OT on P-256,
//                       IKNP, sealing), without TLS
//   NODEFL_FP_TLS       the session behind a DevicePump and TLS endpoint
//                       (TLS 1.2 client, ECDHE-ECDSA, X.509 chain check)
// Each image runs: it carves its roles' storage from one arena and prints
// the arena's high-water mark, the stack's, and MbedTLS's heap use, then
// exits 0. No server is attached, so the roles idle: the arena figure is
// their full storage (roles carve it all up front), the stack figure is
// NOT a role's peak (the firmware tests' run gives that).
#include <cstdio>

#include "nodefl/core/arena.h"
#include "nodefl/cortex_m/board.h"
#include "nodefl/platform/platform.h"

#if !defined(NODEFL_FP_BASELINE)
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/limits.h"
#include "nodefl/protocol/frame.h"
#endif
#if defined(NODEFL_FP_HCT) || defined(NODEFL_FP_WALK)
#include "nodefl/fedwalk/hct_role.h"
#include "nodefl/fedwalk/hct_sizing.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/random/drbg.h"
#endif
#if defined(NODEFL_FP_WALK)
#include "nodefl/fedwalk/walk_role.h"
#include "nodefl/fedwalk/walk_sizing.h"
#endif
#if defined(NODEFL_FP_COMPARE)
#include "nodefl/compare/compare_role.h"
#include "nodefl/compare/compare_sizing.h"
#include "nodefl/random/drbg.h"
#endif
#if defined(NODEFL_FP_WALK) || defined(NODEFL_FP_COMPARE) || defined(NODEFL_FP_TLS)
#include "nodefl/crypto/rng.h"
#include "nodefl/tls/credentials.h"
#endif
#if defined(NODEFL_FP_TLS)
#include "nodefl/client/device_pump.h"
#include "nodefl/random/drbg.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/endpoint.h"
#endif

namespace {

using namespace nodefl;
using namespace nodefl::cortex_m;

// The example device: degree 16 (the "O(degree)" part scales with it).
constexpr uint32_t kOwnId = 7;
constexpr uint32_t kDegree = 16;

// Role storage. Sized generously; the figure printed is what was carved.
alignas(8) uint8_t g_arena_memory[NODEFL_FP_ARENA_BYTES];

#if defined(NODEFL_FP_WALK) || defined(NODEFL_FP_COMPARE) || defined(NODEFL_FP_TLS)
// Sealing and TLS parse certificates and do bignum arithmetic inside
// MbedTLS, which allocates from this buffer only.
alignas(8) uint8_t g_mbedtls_heap[NODEFL_FP_MBEDTLS_HEAP_BYTES];
#endif

#if !defined(NODEFL_FP_BASELINE)
// The session's frame buffer (one maximal frame) and output (two).
constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
uint8_t g_frame[kMaxFrame];
uint8_t g_output[2 * kMaxFrame];
#endif

void Report(const char* image, const Arena& arena) {
  char line[200];
  std::snprintf(line, sizeof line,
                "footprint %s: arena high-water %u bytes; stack high-water %u bytes; MbedTLS heap high-water %u "
                "bytes; sbrk calls %u\r\n",
                image, static_cast<unsigned>(arena.high_water_mark()), static_cast<unsigned>(StackHighWater()),
                static_cast<unsigned>(MbedtlsHeapHighWater()), static_cast<unsigned>(SbrkCalls()));
  BoardWrite(line);
}

// Every image ends here: a non-OK step or an attempt to use newlib's heap
// fails the run.
int Finish(const char* image, const Arena& arena, Status status) {
  Report(image, arena);
  if (!status.ok() || SbrkCalls() != 0) {
    BoardWrite("footprint image FAILED\r\n");
    return 1;
  }
  return 0;
}

#define FP_TRY(expr)                                   \
  do {                                                 \
    const Status fp_status_ = (expr);                  \
    if (!fp_status_.ok()) return Finish(kImage, arena, fp_status_); \
  } while (0)

}  // namespace

int main() {
  BoardInit();
  const Platform platform = MakeBoardPlatform(LogLevel::kInfo);
  Arena arena(Span<uint8_t>(g_arena_memory, sizeof g_arena_memory));
#if defined(NODEFL_FP_WALK) || defined(NODEFL_FP_COMPARE) || defined(NODEFL_FP_TLS)
  BoardInitMbedtlsHeap(Span<uint8_t>(g_mbedtls_heap, sizeof g_mbedtls_heap));
#endif

#if defined(NODEFL_FP_BASELINE)
  static constexpr const char* kImage = "baseline";
  platform.log.Log(LogLevel::kInfo, "board up at %lu us", static_cast<unsigned long>(BoardMicros()));
  return Finish(kImage, arena, Status::Ok());
#else
  device::SessionOptions options;
  options.device_id = kOwnId;
  options.log = platform.log;
  static device::DeviceSession session(options, device::SessionBuffers{Span<uint8_t>(g_frame, sizeof g_frame),
                                                                       Span<uint8_t>(g_output, sizeof g_output)});
#endif

#if defined(NODEFL_FP_HCT) || defined(NODEFL_FP_WALK) || defined(NODEFL_FP_COMPARE) || defined(NODEFL_FP_TLS)
  static Drbg drbg;
  const uint8_t personalization[] = {'f', 'p'};
#endif

#if defined(NODEFL_FP_SESSION)
  static constexpr const char* kImage = "session";
#elif defined(NODEFL_FP_HCT) || defined(NODEFL_FP_WALK)
#if defined(NODEFL_FP_HCT)
  static constexpr const char* kImage = "fedwalk-hct";
#else
  static constexpr const char* kImage = "fedwalk-hct+walk";
#endif
  FP_TRY(drbg.SeedFromEntropy(platform.entropy, personalization));
  static LedgerEntry ledger_entries[8];
  static PrivacyLedger ledger(ledger_entries);
  fedwalk::HctSizing hct_sizing;
  hct_sizing.neighbours = kDegree;
  Result<fedwalk::HctStorage> hct_storage = fedwalk::Carve(arena, hct_sizing);
  FP_TRY(hct_storage.status());
  for (uint32_t i = 0; i < kDegree; ++i) hct_storage->neighbours[i].id = 100 + i;
  static fedwalk::FedWalkHctRole hct(kOwnId, *hct_storage, drbg, ledger);
  FP_TRY(hct.Init());
  FP_TRY(session.AddRole(hct));
#if defined(NODEFL_FP_WALK)
  static tls::TlsCredentials credentials;  // loaded by a real device from its provisioning
  fedwalk::WalkSizing walk_sizing;
  walk_sizing.neighbours = kDegree;
  Result<fedwalk::WalkArenaStorage> walk_storage = fedwalk::Carve(arena, walk_sizing);
  FP_TRY(walk_storage.status());
  static fedwalk::FedWalkWalkRole walk(kOwnId, walk_storage->storage, credentials, &crypto::DrbgRandom, &drbg, drbg,
                                       ledger);
  FP_TRY(session.AddRole(walk));
#endif
#elif defined(NODEFL_FP_COMPARE)
  static constexpr const char* kImage = "compare";
  FP_TRY(drbg.SeedFromEntropy(platform.entropy, personalization));
  static tls::TlsCredentials credentials;
  compare::CompareSizing compare_sizing;
  compare_sizing.neighbours = kDegree;
  Result<compare::CompareArenaStorage> compare_storage = compare::Carve(arena, compare_sizing);
  FP_TRY(compare_storage.status());
  for (uint32_t i = 0; i < kDegree; ++i) compare_storage->peers.span()[i].id = 100 + i;
  static compare::SecureCompareRole compare_role(kOwnId, compare_storage->peers.span(),
                                                 compare_storage->contexts.span(), credentials, &crypto::DrbgRandom,
                                                 &drbg);
  FP_TRY(session.AddRole(compare_role));
#elif defined(NODEFL_FP_TLS)
  static constexpr const char* kImage = "tls";
  FP_TRY(drbg.SeedFromEntropy(platform.entropy, personalization));
  static tls::TlsCredentials credentials;
  static tls::TlsConfig config;
  // Without provisioned credentials Init fails (kFailedPrecondition); the
  // code a provisioned device runs is linked all the same.
  const Status config_status = config.Init(tls::TlsRole::kClient, credentials, &crypto::DrbgRandom, &drbg);
  static uint8_t tls_in[client::kPumpTlsInboundBytes];
  static uint8_t tls_out[client::kPumpTlsOutboundBytes];
  static uint8_t plaintext[client::kPumpPlaintextBytes];
  static tls::TlsEndpoint endpoint;
  static client::DevicePump pump(endpoint, session, ByteSpan(plaintext, sizeof plaintext));
  if (config_status.ok()) {
    FP_TRY(endpoint.Init(config, ByteSpan(tls_in, sizeof tls_in), ByteSpan(tls_out, sizeof tls_out),
                         "nodefl.example.org"));
    FP_TRY(pump.Connect(BoardMicros()));
  } else {
    // Reach the credential loaders as a device does at boot.
    const uint8_t none[1] = {0};
    static_cast<void>(credentials.LoadCaChain(ConstByteSpan(none, 0)));
    static_cast<void>(credentials.LoadOwnIdentity(ConstByteSpan(none, 0), ConstByteSpan(none, 0)));
    static_cast<void>(pump.Tick(BoardMicros()));
  }
  return Finish(kImage, arena, Status::Ok());
#endif

#if !defined(NODEFL_FP_BASELINE) && !defined(NODEFL_FP_TLS)
  FP_TRY(session.Start(BoardMicros()));
  FP_TRY(session.Poll(BoardMicros()));
  size_t consumed = 0;
  // No server: nothing to feed but an empty read, as a main loop would.
  FP_TRY(session.OnReceived(ConstByteSpan(), BoardMicros(), &consumed));
  return Finish(kImage, arena, Status::Ok());
#endif
}
