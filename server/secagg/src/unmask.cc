// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/secagg/unmask.h"

#include <algorithm>

#include "nodefl/crypto/rng.h"
#include "nodefl/secagg/masks.h"

namespace nodefl::server::secagg {
namespace sa = nodefl::secagg;

namespace {

RoundResult Abort(std::string why) {
  RoundResult r;
  r.error = std::move(why);
  return r;
}

bool Has(const std::vector<uint32_t>& list, uint32_t id) { return std::find(list.begin(), list.end(), id) != list.end(); }

}  // namespace

RoundResult Unmask(const RoundView& view, Drbg& random) {
  if (view.threshold == 0 || view.length == 0) return Abort("threshold and length must be positive");
  // The reporters' vectors, one by one or already summed (RoundView::reporters).
  const bool summed = !view.reporters.empty();
  std::vector<uint32_t> reporters = view.reporters;
  std::sort(reporters.begin(), reporters.end());
  if (summed) {
    if (!view.masked.empty()) return Abort("give the reporters' vectors or their sum, not both");
    if (std::adjacent_find(reporters.begin(), reporters.end()) != reporters.end()) return Abort("a reporter twice");
    if (view.masked_sum.size() != view.length) return Abort("the summed vectors have another length");
  }
  const auto reported = [&](uint32_t id) {
    return summed ? std::binary_search(reporters.begin(), reporters.end(), id) : view.masked.count(id) != 0;
  };
  RoundResult r;
  for (const auto& [id, key] : view.public_keys) (reported(id) ? r.included : r.dropped).push_back(id);
  for (uint32_t id : reporters) {
    if (view.public_keys.count(id) == 0) return Abort("device " + std::to_string(id) + " reported without a key");
  }
  for (const auto& [id, vector] : view.masked) {
    if (view.public_keys.count(id) == 0) return Abort("device " + std::to_string(id) + " reported without a key");
    if (vector.size() != view.length) return Abort("device " + std::to_string(id) + " sent a vector of another length");
  }
  if (view.paper && !r.dropped.empty()) {
    return Abort("paper mode (kCAGC Protocol 4) has no dropout recovery: device " + std::to_string(r.dropped[0]) +
                 " masked and did not report");
  }
  std::vector<uint32_t> sum = summed ? view.masked_sum : std::vector<uint32_t>(view.length, 0);
  for (uint32_t u : r.included) {
    if (!summed) {
      const std::vector<uint32_t>& y = view.masked.at(u);
      for (size_t i = 0; i < view.length; ++i) sum[i] += y[i];
    }
    if (view.paper) continue;  // no self mask
    // Its self mask, from the survivors' shares of b_u.
    const auto shares = view.self_seed_shares.find(u);
    sa::MaskSeed b;
    if (shares == view.self_seed_shares.end() ||
        !sa::ReconstructSecret(Span<const sa::Share>(shares->second), view.threshold, ByteSpan(b.bytes, sa::kSeedBytes))
             .ok()) {
      return Abort("the self seed of device " + std::to_string(u) + " cannot be reconstructed (fewer than " +
                   std::to_string(view.threshold) + " valid shares)");
    }
    if (!sa::ApplyMask(b, view.round, sa::MaskSign::kSubtract, Span<uint32_t>(sum)).ok()) return Abort("mask stream");
  }
  for (uint32_t v : r.dropped) {
    const auto shares = view.secret_shares.find(v);
    uint8_t secret[sa::kRoundSecretBytes];
    sa::RoundKeyPair rebuilt;
    if (shares == view.secret_shares.end() ||
        !sa::ReconstructSecret(Span<const sa::Share>(shares->second), view.threshold, ByteSpan(secret)).ok() ||
        !rebuilt.FromSecret(ConstByteSpan(secret)).ok()) {
      return Abort("the round secret of dropped device " + std::to_string(v) + " cannot be reconstructed");
    }
    // The secret must be the one whose public key v announced.
    const std::vector<uint8_t>& announced = view.public_keys.at(v);
    if (!std::equal(announced.begin(), announced.end(), rebuilt.public_key().begin(), rebuilt.public_key().end())) {
      return Abort("the shares of dropped device " + std::to_string(v) + " do not open its announced key");
    }
    const auto peers = view.peers.find(v);
    if (peers == view.peers.end()) continue;  // it masked with nobody
    for (uint32_t u : peers->second) {
      if (!Has(r.included, u)) continue;  // both gone: their masks never reached the sum
      sa::MaskSeed s;
      const std::vector<uint8_t>& key = view.public_keys.at(u);
      if (!sa::PairMaskSeed(rebuilt, v, ConstByteSpan(key.data(), key.size()), u, view.round, &crypto::DrbgRandom,
                            &random, &s)
               .ok()) {
        return Abort("pair seed of devices " + std::to_string(u) + " and " + std::to_string(v));
      }
      // u added sign(u, v) PRG(s_uv): take it away.
      if (!sa::ApplyMask(s, view.round, sa::Opposite(sa::PairSign(u, v)), Span<uint32_t>(sum)).ok()) {
        return Abort("mask stream");
      }
    }
  }
  r.sum = std::move(sum);
  return r;
}

}  // namespace nodefl::server::secagg
