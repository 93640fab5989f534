// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-secagg-bench: what one round of dropout-robust secure aggregation
// costs (docs/secure-aggregation.md), in one process, without the network:
//   - per device, for a fleet of n with k mask peers (full graph: k = n - 1;
//     sparse, Bell et al.: k = 2 ceil(log2 n)): a round key pair, k pair
//     seeds (one ECDH each), its self seed and round secret Shamir-shared
//     among the k peers, and 1 + k mask streams over the vector; the bytes
//     it sends (its public key, 2 k sealed shares, the masked vector, the
//     reveals it answers for its peers);
//   - the server's unmasking (server/secagg Unmask) of a whole simulated
//     fleet with 0 % and 10 % of devices dropped after masking, where the
//     fleet is small enough to simulate (every device's ECDHs are run).
// In tests/ because it joins device arithmetic (sdk/secagg) and server code.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/secagg/masks.h"
#include "nodefl/secagg/round_keys.h"
#include "nodefl/secagg/shamir.h"
#include "nodefl/server/secagg/unmask.h"

namespace {

namespace sa = nodefl::secagg;
using nodefl::ByteSpan;
using nodefl::ConstByteSpan;
using nodefl::Span;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

uint32_t SparsePeers(uint32_t n) {
  const auto k = static_cast<uint32_t>(2 * std::ceil(std::log2(static_cast<double>(n))));
  return std::min(n - 1, k + (k % 2));
}

// Bytes on the wire per share: x (8) + the chunks of a 32-byte secret.
constexpr size_t kShareBytes = 8 + 8 * sa::kMaxChunks;

struct Device {
  sa::RoundKeyPair keys;
  sa::MaskSeed self;
  std::vector<uint32_t> peers;
  std::vector<sa::Share> self_shares, key_shares;
  std::vector<uint32_t> masked;
};

// Device `id` of `fleet` (keys drawn) shares its self seed and round
// secret among its peers and masks `input`: the device's work in a round.
bool MaskDevice(std::vector<Device>& fleet, uint32_t id, const std::vector<float>& input, uint32_t threshold,
                uint64_t round, nodefl::Drbg& random) {
  const sa::FixedPoint code{1.0f, 4096.0f};
  Device& d = fleet[id];
  (void)random.Fill(Span<uint8_t>(d.self.bytes, sa::kSeedBytes));
  std::vector<uint64_t> xs;
  for (uint32_t p : d.peers) xs.push_back(p + 1);
  d.self_shares.resize(xs.size());
  d.key_shares.resize(xs.size());
  if (!sa::ShareSecret(ConstByteSpan(d.self.bytes, sa::kSeedBytes), threshold, Span<const uint64_t>(xs), random,
                       Span<sa::Share>(d.self_shares))
           .ok() ||
      !sa::ShareSecret(d.keys.secret(), threshold, Span<const uint64_t>(xs), random, Span<sa::Share>(d.key_shares))
           .ok()) {
    return false;
  }
  d.masked.resize(input.size());
  (void)sa::EncodeFixedPoint(code, Span<const float>(input), Span<uint32_t>(d.masked));
  (void)sa::ApplyMask(d.self, round, sa::MaskSign::kAdd, Span<uint32_t>(d.masked));
  for (uint32_t p : d.peers) {
    sa::MaskSeed s;
    if (!sa::PairMaskSeed(d.keys, id, fleet[p].keys.public_key(), p, round, &nodefl::crypto::DrbgRandom, &random, &s)
             .ok()) {
      return false;
    }
    (void)sa::ApplyMask(s, round, sa::PairSign(id, p), Span<uint32_t>(d.masked));
  }
  return true;
}

bool GenerateKeys(std::vector<Device>& fleet, nodefl::Drbg& random) {
  for (Device& d : fleet) {
    if (!d.keys.Generate(&nodefl::crypto::DrbgRandom, &random).ok()) return false;
  }
  return true;
}

// Masks every device's input; the mean milliseconds per device (-1 on a
// failure).
double MaskFleet(std::vector<Device>& fleet, uint32_t threshold, uint64_t round, nodefl::Drbg& random,
                 const std::vector<std::vector<float>>& inputs) {
  if (!GenerateKeys(fleet, random)) return -1;
  double total = 0;
  for (uint32_t id = 0; id < fleet.size(); ++id) {
    const auto started = Clock::now();
    if (!MaskDevice(fleet, id, inputs[id], threshold, round, random)) return -1;
    total += Ms(started);
  }
  return total / static_cast<double>(fleet.size());
}

void Graph(std::vector<Device>& fleet, uint32_t k, std::mt19937_64& rng) {
  const auto n = static_cast<uint32_t>(fleet.size());
  if (k >= n - 1) {
    for (uint32_t a = 0; a < n; ++a) {
      for (uint32_t b = 0; b < n; ++b) {
        if (a != b) fleet[a].peers.push_back(b);
      }
    }
    return;
  }
  // A ring in a random order, k / 2 on either side: every device has k.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 1; j <= k / 2; ++j) {
      fleet[order[i]].peers.push_back(order[(i + j) % n]);
      fleet[order[(i + j) % n]].peers.push_back(order[i]);
    }
  }
  for (Device& d : fleet) std::sort(d.peers.begin(), d.peers.end());
}

}  // namespace

int main(int argc, char** argv) {
  size_t length = 10'000;
  std::vector<uint32_t> fleets = {100, 1000, 10000};
  uint32_t simulate_up_to = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      std::printf("usage: nodefl-secagg-bench [--length L] [--simulate-up-to N]\n"
                  "One round of dropout-robust secure aggregation in one process: per device and per\n"
                  "fleet size (100, 1,000, 10,000; full and sparse mask graph) the masking CPU and the\n"
                  "bytes sent, and the server's unmasking time at 0 %% and 10 %% dropouts for fleets up\n"
                  "to N devices (default 1000; larger ones get the per-device figures only).\n");
      return 0;
    }
    if ((a == "--length" || a == "--simulate-up-to") && i + 1 < argc) {
      const long v = std::strtol(argv[++i], nullptr, 10);
      if (v <= 0) {
        std::fprintf(stderr, "nodefl-secagg-bench: %s must be positive\n", a.c_str());
        return 2;
      }
      if (a == "--length") {
        length = static_cast<size_t>(v);
      } else {
        simulate_up_to = static_cast<uint32_t>(v);
      }
      continue;
    }
    std::fprintf(stderr, "nodefl-secagg-bench: unknown argument '%s' (see --help)\n", a.c_str());
    return 2;
  }
  nodefl::Drbg random;
  if (!random.SeedDeterministic(1).ok()) return 1;
  std::mt19937_64 rng(2);
  std::printf("vector length %zu words (fixed point in Z_2^32); threshold: a majority of a device's peers\n",
              length);
  std::printf("%-6s %-6s %6s | %14s %14s | %16s %16s\n", "n", "graph", "peers", "device ms", "device KB sent",
              "server ms (0 %)", "server ms (10 %)");
  for (uint32_t n : fleets) {
    for (bool sparse : {false, true}) {
      const uint32_t k = sparse ? SparsePeers(n) : n - 1;
      const uint32_t t = (k + 1) / 2 + (k % 2 == 0 ? 1 : 0);  // a majority of the peers
      // Bytes a device sends: public key, 2 k shares (sealed: + 40 bytes
      // each for the seal's header and tag), the masked vector, and for
      // each peer one revealed share.
      const double sent = 65.0 + 2.0 * k * (kShareBytes + 40) + 4.0 * length + k * (kShareBytes + 40);
      const bool simulate = n <= simulate_up_to && !(n > 100 && !sparse);
      double device_ms = 0, server0 = -1, server10 = -1;
      if (simulate) {
        std::vector<Device> fleet(n);
        Graph(fleet, k, rng);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<std::vector<float>> inputs(n, std::vector<float>(length));
        for (auto& x : inputs) {
          for (float& v : x) v = u(rng);
        }
        device_ms = MaskFleet(fleet, t, 9, random, inputs);
        for (double rate : {0.0, 0.1}) {
          std::vector<uint32_t> ids(n);
          std::iota(ids.begin(), ids.end(), 0u);
          std::shuffle(ids.begin(), ids.end(), rng);
          const std::set<uint32_t> dropped(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(rate * n));
          nodefl::server::secagg::RoundView view;
          view.round = 9;
          view.threshold = t;
          view.length = length;
          for (uint32_t d = 0; d < n; ++d) {
            const auto key = fleet[d].keys.public_key();
            view.public_keys[d] = std::vector<uint8_t>(key.begin(), key.end());
            view.peers[d] = fleet[d].peers;
            const bool gone = dropped.count(d) != 0;
            if (!gone) view.masked[d] = fleet[d].masked;
            auto& out = gone ? view.secret_shares[d] : view.self_seed_shares[d];
            const auto& shares = gone ? fleet[d].key_shares : fleet[d].self_shares;
            for (size_t j = 0; j < fleet[d].peers.size(); ++j) {
              if (dropped.count(fleet[d].peers[j]) == 0) out.push_back(shares[j]);
            }
          }
          const auto started = Clock::now();
          const auto r = nodefl::server::secagg::Unmask(view, random);
          const double ms = Ms(started);
          if (!r.ok()) std::fprintf(stderr, "n %u %s %.0f%%: round aborted: %s\n", n, sparse ? "sparse" : "full",
                                    rate * 100, r.error.c_str());
          (rate == 0.0 ? server0 : server10) = r.ok() ? ms : -1;
        }
      } else {
        // One device's share of the work, on a graph of its k peers.
        std::vector<Device> fleet(k + 1);
        for (uint32_t p = 1; p <= k; ++p) fleet[0].peers.push_back(p);
        if (!GenerateKeys(fleet, random)) return 1;
        const std::vector<float> input(length, 0.5f);
        const auto started = Clock::now();
        if (!MaskDevice(fleet, 0, input, t, 9, random)) return 1;
        device_ms = Ms(started);
      }
      auto cell = [](double v) { return v < 0 ? std::string("-") : std::to_string(static_cast<long long>(v + 0.5)); };
      std::printf("%-6u %-6s %6u | %14.1f %14.1f | %16s %16s\n", n, sparse ? "sparse" : "full", k, device_ms,
                  sent / 1024.0, cell(server0).c_str(), cell(server10).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
