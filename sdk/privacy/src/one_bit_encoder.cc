// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/one_bit_encoder.h"

#include <cfloat>
#include <cmath>

namespace nodefl {
namespace {

constexpr uint8_t kCodeZero = 0;
constexpr uint8_t kCodeOne = 1;
constexpr uint8_t kCodeHalf = 2;

// ceil(d / wl) without overflow.
uint32_t LargestBin(uint32_t dims, uint32_t workload) {
  return dims / workload + (dims % workload != 0 ? 1u : 0u);
}

// (d/m) (b - a)/2 (e^eps' + 1)/(e^eps' - 1): the distance of a recovered 0
// or 1 from the midpoint. (e+1)/(e-1) = 1/tanh(eps'/2), which stays accurate
// for the tiny eps' that a large d produces in paper mode, where e - 1 would
// cancel. d/m undoes the sampling: a dim is released with probability m/d.
double RecoveryHalfSpan(const OneBitParams& p) {
  const double undo_sampling = static_cast<double>(p.dims) / static_cast<double>(p.released_dims);
  return undo_sampling * 0.5 * (static_cast<double>(p.upper) - static_cast<double>(p.lower)) /
         std::tanh(0.5 * p.epsilon_per_element);
}

// m = max(1, floor(eps / 2.5)), at most d (header comment).
uint32_t StrictReleasedDims(double epsilon, uint32_t dims) {
  const double m = std::floor(epsilon / kStrictEpsilonPerReleasedDim);
  if (!(m >= 1.0)) return 1;
  return m >= static_cast<double>(dims) ? dims : static_cast<uint32_t>(m);
}

Status ValidateParams(const OneBitParams& p) {
  if (!std::isfinite(p.lower) || !std::isfinite(p.upper) || !(p.lower < p.upper)) {
    return Status::InvalidArgument();
  }
  if (!(p.epsilon_per_element > 0.0) || !(p.epsilon_per_element <= kMaxEpsilonPerBit)) {
    return Status::InvalidArgument();
  }
  if (p.workload == 0 || p.dims == 0) return Status::InvalidArgument();
  if (p.released_dims == 0 || p.released_dims > p.dims) return Status::InvalidArgument();
  // A recovered value must be a finite float, or training would see inf.
  const double mid = 0.5 * (static_cast<double>(p.lower) + static_cast<double>(p.upper));
  const double extreme = std::fabs(mid) + RecoveryHalfSpan(p);
  if (!(extreme <= static_cast<double>(FLT_MAX))) return Status::InvalidArgument();
  return Status::Ok();
}

// Every element is checked before anything is drawn, so a rejected call
// spends no randomness and releases nothing.
Status ValidateFeature(const OneBitParams& p, Span<const float> x, Span<float> out) {
  NODEFL_TRY(ValidateParams(p));
  if (x.size() != p.dims || out.size() != p.dims) return Status::InvalidArgument();
  for (const float v : x) {
    if (!std::isfinite(v)) return Status::InvalidArgument();
    if (v < p.lower || v > p.upper) return Status::OutOfRange();
  }
  return Status::Ok();
}

// Knuth's selection sampling (Algorithm S), one step: with `remaining` dims
// left (this one included) and *needed still to take, takes this one with
// probability needed / remaining. Over a whole pass exactly the initial
// *needed dims are taken and every subset of that size is equally likely.
// needed == remaining takes without drawing, so a pass that keeps every dim
// (paper mode) consumes no randomness.
bool TakeNext(Drbg& rng, uint32_t* needed, uint32_t remaining) {
  if (*needed == 0 || !rng.BernoulliRational(*needed, remaining)) return false;
  --*needed;
  return true;
}

float DrawBit(Drbg& rng, const OneBitParams& p, float x) {
  const double range = static_cast<double>(p.upper) - static_cast<double>(p.lower);
  double fraction = (static_cast<double>(x) - static_cast<double>(p.lower)) / range;
  // Rounding can only push the fraction to the interval's edge, not past it,
  // but keep the probability inside [p(a), p(b)] regardless.
  fraction = std::fmin(std::fmax(fraction, 0.0), 1.0);
  return rng.Bernoulli(OneBitProbabilityOfOne(fraction, p.epsilon_per_element)) ? 1.0f : 0.0f;
}

// A failed DRBG returns zeros, which would turn into a biased but plausible
// looking encoding; overwrite it so a caller that ignores the Status still
// has nothing to leak.
Status FinishDraws(Drbg& rng, Span<float> out) {
  const Status s = rng.status();
  if (!s.ok()) {
    for (float& v : out) v = 0.5f;
  }
  return s;
}

bool DecodeElement(float v, uint8_t* code) {
  if (v == 0.0f) {
    *code = kCodeZero;
  } else if (v == 1.0f) {
    *code = kCodeOne;
  } else if (v == 0.5f) {
    *code = kCodeHalf;
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<OneBitParams> MakeOneBitParams(PrivacyMode mode, double epsilon, uint32_t workload,
                                      uint32_t dims, float lower, float upper) {
  if (!std::isfinite(epsilon) || !(epsilon > 0.0)) return Status::InvalidArgument();
  if (workload == 0 || dims == 0) return Status::InvalidArgument();
  OneBitParams p;
  p.lower = lower;
  p.upper = upper;
  p.workload = workload;
  p.dims = dims;
  if (mode == PrivacyMode::kPaper) {
    // Eq. 26's eps * wl(u) / d on every dim.
    p.released_dims = dims;
    p.epsilon_per_element = epsilon * static_cast<double>(workload) / static_cast<double>(dims);
  } else {
    // m sampled dims, each released once in total (to one receiver), at
    // eps / m: the union of the receivers is held to eps.
    p.released_dims = StrictReleasedDims(epsilon, dims);
    p.epsilon_per_element = epsilon / static_cast<double>(p.released_dims);
  }
  NODEFL_TRY(ValidateParams(p));
  return p;
}

Result<OneBitCost> OneBitEpsilon(const OneBitParams& params) {
  NODEFL_TRY(ValidateParams(params));
  OneBitCost cost;
  const uint32_t bin = LargestBin(params.dims, params.workload);
  const uint32_t seen_by_one = bin < params.released_dims ? bin : params.released_dims;
  cost.per_receiver = static_cast<double>(seen_by_one) * params.epsilon_per_element;
  cost.all_receivers = static_cast<double>(params.released_dims) * params.epsilon_per_element;
  return cost;
}

double OneBitProbabilityOfOne(double fraction, double epsilon_per_element) {
  // Eq. 26 as written: 1/(e+1) + u (e-1)/(e+1), with (e-1)/(e+1) = tanh(eps'/2)
  // so that a tiny eps' keeps its (tiny) advantage instead of cancelling.
  return 1.0 / (std::exp(epsilon_per_element) + 1.0) +
         fraction * std::tanh(0.5 * epsilon_per_element);
}

Status AssignDimensionsToReceivers(Drbg& rng, uint32_t workload, Span<uint32_t> receiver_of_dim) {
  const size_t d = receiver_of_dim.size();
  if (workload == 0 || d == 0 || d > UINT32_MAX) return Status::InvalidArgument();
  NODEFL_TRY(rng.status());
  const uint32_t dims = static_cast<uint32_t>(d);
  const uint32_t base = dims / workload;
  // Choose which `extra` receivers get one more dim: Knuth's selection
  // sampling, so no receiver is favoured and no scratch memory is needed.
  uint32_t extra = dims % workload;
  size_t pos = 0;
  for (uint32_t k = 0; k < workload; ++k) {
    uint32_t count = base;
    if (extra > 0 && rng.BernoulliRational(extra, workload - k)) {
      ++count;
      --extra;
    }
    for (uint32_t c = 0; c < count; ++c) receiver_of_dim[pos++] = k;
  }
  // Fisher-Yates: which dims land in which bin is uniform.
  for (size_t i = d - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(rng.UniformBelow(static_cast<uint64_t>(i) + 1));
    const uint32_t tmp = receiver_of_dim[i];
    receiver_of_dim[i] = receiver_of_dim[j];
    receiver_of_dim[j] = tmp;
  }
  return rng.status();
}

Status AssignReleasedDimensions(Drbg& rng, const OneBitParams& params, Span<uint32_t> receiver_of_dim) {
  NODEFL_TRY(ValidateParams(params));
  if (receiver_of_dim.size() != params.dims) return Status::InvalidArgument();
  NODEFL_TRY(AssignDimensionsToReceivers(rng, params.workload, receiver_of_dim));
  // Independently of the partition, keep a uniform m-subset of the dims.
  uint32_t needed = params.released_dims;
  for (size_t i = 0; i < receiver_of_dim.size(); ++i) {
    if (TakeNext(rng, &needed, params.dims - static_cast<uint32_t>(i))) continue;
    receiver_of_dim[i] = kDimNotReleased;
  }
  return rng.status();
}

Status EncodeOneBit(Drbg& rng, const OneBitParams& params, Span<const float> x,
                    Span<float> encoded_out) {
  NODEFL_TRY(ValidateFeature(params, x, encoded_out));
  NODEFL_TRY(rng.status());
  uint32_t needed = params.released_dims;
  for (size_t i = 0; i < x.size(); ++i) {
    // 0.5 recovers to the midpoint: an unreleased dim carries no information.
    const bool released = TakeNext(rng, &needed, params.dims - static_cast<uint32_t>(i));
    encoded_out[i] = released ? DrawBit(rng, params, x[i]) : 0.5f;
  }
  return FinishDraws(rng, encoded_out);
}

Status EncodeOneBitPartial(Drbg& rng, const OneBitParams& params, Span<const float> x,
                           Span<const uint32_t> receiver_of_dim, uint32_t receiver,
                           Span<float> encoded_out) {
  NODEFL_TRY(ValidateFeature(params, x, encoded_out));
  if (receiver_of_dim.size() != params.dims || receiver >= params.workload) {
    return Status::InvalidArgument();
  }
  uint32_t in_bin = 0;
  uint32_t released = 0;
  for (const uint32_t k : receiver_of_dim) {
    if (k == kDimNotReleased) continue;
    if (k >= params.workload) return Status::InvalidArgument();
    in_bin += (k == receiver);
    ++released;
  }
  // Exactly m released dims: more would spend more than all_receivers, fewer
  // would bias the d/m-scaled recovery.
  if (released != params.released_dims) return Status::InvalidArgument();
  if (in_bin > LargestBin(params.dims, params.workload)) return Status::InvalidArgument();
  NODEFL_TRY(rng.status());
  for (size_t i = 0; i < x.size(); ++i) {
    // 0.5 recovers to the midpoint: the receiver learns nothing about dims
    // that are not its own.
    encoded_out[i] = receiver_of_dim[i] == receiver ? DrawBit(rng, params, x[i]) : 0.5f;
  }
  return FinishDraws(rng, encoded_out);
}

Status RecoverOneBit(const OneBitParams& params, Span<const float> encoded,
                     Span<float> recovered_out) {
  NODEFL_TRY(ValidateParams(params));
  if (encoded.size() != params.dims || recovered_out.size() != params.dims) {
    return Status::InvalidArgument();
  }
  uint8_t code = 0;
  for (const float v : encoded) {
    if (!DecodeElement(v, &code)) return Status::InvalidArgument();
  }
  const double mid = 0.5 * (static_cast<double>(params.lower) + static_cast<double>(params.upper));
  const double half_span = RecoveryHalfSpan(params);
  for (size_t i = 0; i < encoded.size(); ++i) {
    // Eq. 29 with (x' - 1/2) in {-1/2, 0, 1/2}.
    const double centred = 2.0 * (static_cast<double>(encoded[i]) - 0.5);
    recovered_out[i] = static_cast<float>(mid + centred * half_span);
  }
  return Status::Ok();
}

Status PackOneBit(Span<const float> encoded, Span<uint8_t> out) {
  if (out.size() != OneBitPackedSize(encoded.size())) return Status::InvalidArgument();
  uint8_t code = 0;
  for (const float v : encoded) {
    if (!DecodeElement(v, &code)) return Status::InvalidArgument();
  }
  for (uint8_t& b : out) b = 0;
  for (size_t i = 0; i < encoded.size(); ++i) {
    (void)DecodeElement(encoded[i], &code);
    out[i / 4] = static_cast<uint8_t>(out[i / 4] | (code << (2 * (i % 4))));
  }
  return Status::Ok();
}

Status UnpackOneBit(Span<const uint8_t> packed, Span<float> encoded_out) {
  const size_t d = encoded_out.size();
  if (packed.size() != OneBitPackedSize(d)) return Status::InvalidArgument();
  for (size_t i = 0; i < packed.size() * 4; ++i) {
    const uint8_t code = static_cast<uint8_t>((packed[i / 4] >> (2 * (i % 4))) & 3u);
    // Padding must be zero so that one encoding has exactly one wire form.
    if (i >= d ? code != kCodeZero : code > kCodeHalf) return Status::InvalidArgument();
  }
  for (size_t i = 0; i < d; ++i) {
    const uint8_t code = static_cast<uint8_t>((packed[i / 4] >> (2 * (i % 4))) & 3u);
    encoded_out[i] = code == kCodeZero ? 0.0f : code == kCodeOne ? 1.0f : 0.5f;
  }
  return Status::Ok();
}

}  // namespace nodefl
