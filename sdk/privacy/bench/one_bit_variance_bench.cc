// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-one-bit-variance-bench: the variance of a recovered feature element under
// the one-bit encoder's strict mode, before and after sampling, measured
// and computed.
//
//   former strict: every one of the d dims released at eps/d;
//   sampled strict: m = max(1, floor(eps/2.5)) dims (at most d) released at
//                   eps/m, recovered with the d/m factor (Wang et al.,
//                   ICDE 2019; one_bit_encoder.h).
//
// Both hold all receivers together to eps. Features are in [0, 1] with
// element i at i/(d-1); the variance is the mean over the d elements of
// E[(x'' - x_i)^2] (the recovery is unbiased, so this is its variance).
// "measured" averages (x'' - x_i)^2 over the elements of T encodings made by
// the SDK (EncodeOneBit + RecoverOneBit); +- is one standard error, from the
// spread of the per-encoding means. "exact" is the law of one recovered
// element (the midpoint with probability 1 - m/d, or mid +- (d/m) H with
// H = (1/2) coth(eps'/2)), averaged over the elements.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nodefl/privacy/one_bit_encoder.h"
#include "nodefl/random/drbg.h"

namespace {

using nodefl::OneBitParams;

struct Figure {
  double exact = 0.0;
  double measured = 0.0;
  double standard_error = 0.0;
};

double ExactVariance(const OneBitParams& p, const std::vector<float>& x) {
  const double q = static_cast<double>(p.released_dims) / p.dims;
  const double h = 0.5 / std::tanh(0.5 * p.epsilon_per_element) / q;
  double sum = 0.0;
  for (float xi : x) {
    const double prob_one = nodefl::OneBitProbabilityOfOne(xi, p.epsilon_per_element);
    const double up = 0.5 + h - xi, down = 0.5 - h - xi, stay = 0.5 - xi;
    sum += (1 - q) * stay * stay + q * prob_one * up * up + q * (1 - prob_one) * down * down;
  }
  return sum / static_cast<double>(x.size());
}

bool Measure(nodefl::Drbg& rng, const OneBitParams& p, const std::vector<float>& x, int trials, Figure* out) {
  std::vector<float> bits(p.dims), recovered(p.dims);
  double sum = 0.0, sum_sq = 0.0;
  for (int t = 0; t < trials; ++t) {
    if (!nodefl::EncodeOneBit(rng, p, x, bits).ok() || !nodefl::RecoverOneBit(p, bits, recovered).ok()) {
      return false;
    }
    double per_encoding = 0.0;
    for (uint32_t i = 0; i < p.dims; ++i) {
      const double e = static_cast<double>(recovered[i]) - x[i];
      per_encoding += e * e;
    }
    per_encoding /= p.dims;
    sum += per_encoding;
    sum_sq += per_encoding * per_encoding;
  }
  const double n = trials;
  out->exact = ExactVariance(p, x);
  out->measured = sum / n;
  out->standard_error = std::sqrt(std::fmax(sum_sq / n - out->measured * out->measured, 0.0) / (n - 1));
  return true;
}

void PrintHelp() {
  std::puts(
      "usage: nodefl-one-bit-variance-bench [--epsilons 0.5,1,2,4,8,16] [--dims 16,128,512] [--trials T] [--seed S]\n"
      "\n"
      "Prints, per (eps, d), the variance of a recovered element of a feature in [0, 1]^d\n"
      "under the one-bit encoder's strict mode: the former one (eps/d on every dim) and the\n"
      "sampled one (m = max(1, floor(eps/2.5)) dims at eps/m, recovered with d/m), exact and\n"
      "measured over T encodings (default 20000, seed 1), and the gain (former / sampled).");
}

std::vector<double> ParseList(const char* s) {
  std::vector<double> out;
  const char* p = s;
  while (*p != '\0') {
    char* end = nullptr;
    out.push_back(std::strtod(p, &end));
    if (end == p) return {};
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> epsilons = {0.5, 1, 2, 4, 8, 16};
  std::vector<double> dims = {16, 128, 512};
  int trials = 20000;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--help") == 0) {
      PrintHelp();
      return 0;
    } else if (std::strcmp(argv[i], "--epsilons") == 0 && has_value) {
      epsilons = ParseList(argv[++i]);
    } else if (std::strcmp(argv[i], "--dims") == 0 && has_value) {
      dims = ParseList(argv[++i]);
    } else if (std::strcmp(argv[i], "--trials") == 0 && has_value) {
      trials = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "nodefl-one-bit-variance-bench: unknown or incomplete argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (epsilons.empty() || dims.empty() || trials < 2) {
    std::fprintf(stderr, "nodefl-one-bit-variance-bench: bad --epsilons, --dims or --trials\n");
    return 2;
  }
  nodefl::Drbg rng;
  if (!rng.SeedDeterministic(seed).ok()) return 1;
  std::printf("| eps | d | m | eps/m | former: exact | former: measured | sampled: exact | sampled: measured | gain |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (double d_value : dims) {
    const uint32_t d = static_cast<uint32_t>(d_value);
    std::vector<float> x(d);
    for (uint32_t i = 0; i < d; ++i) x[i] = d == 1 ? 0.5f : static_cast<float>(i) / static_cast<float>(d - 1);
    for (double eps : epsilons) {
      auto sampled = nodefl::MakeOneBitParams(nodefl::PrivacyMode::kStrict, eps, 1, d, 0.0f, 1.0f);
      if (!sampled.ok()) {
        std::fprintf(stderr, "nodefl-one-bit-variance-bench: eps %g, d %u refused\n", eps, d);
        return 1;
      }
      OneBitParams former = *sampled;
      former.released_dims = d;
      former.epsilon_per_element = eps / d;
      Figure f, s;
      if (!Measure(rng, former, x, trials, &f) || !Measure(rng, *sampled, x, trials, &s)) {
        std::fprintf(stderr, "nodefl-one-bit-variance-bench: encoding failed\n");
        return 1;
      }
      std::printf("| %g | %u | %u | %.3g | %.4g | %.4g ± %.2g | %.4g | %.4g ± %.2g | %.1f× |\n", eps, d,
                  sampled->released_dims, sampled->epsilon_per_element, f.exact, f.measured, f.standard_error,
                  s.exact, s.measured, s.standard_error, f.exact / s.exact);
    }
  }
  return 0;
}
