// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Lumos's one-bit feature encoder with partial encoding and unbiased
// recovery (Lumos Sec. V, Eq. 26-30, Theorems 3-4).
//
// A device u holds a feature x_u in [a, b]^d and sends it to its wl(u)
// receiving neighbours (wl = workload, the neighbours kept in its trimmed
// tree). Each element is randomised to one bit with the one-bit mechanism
// (Eq. 26, per-element budget eps'):
//   Pr(x' = 1) = 1/(e^eps' + 1) + (x - a)/(b - a) * (e^eps' - 1)/(e^eps' + 1),
// so Pr(1 | x = b) / Pr(1 | x = a) = e^eps' (and symmetrically for 0): one
// element costs exactly eps'. The d dimensions are split at random into wl
// bins; receiver k gets the bits of bin k and 0.5 ("no information") for every
// other dimension, so every dimension reaches exactly one receiver.
//
// Budget, and why the two modes differ:
//   * The paper (Theorem 4) sets eps' = eps * wl / d and counts what ONE
//     receiver sees: d/wl elements * eps' = eps. Against the union of the
//     receivers, or a relay that carries every message, all d elements are
//     visible and the encoder spends d * eps' = eps * wl (seeds README, known
//     defects). When wl does not divide d, a receiver may also get
//     ceil(d/wl) elements, slightly more than eps.
//   * kPaper reproduces eps' = eps * wl / d exactly, every dim released.
//     OneBitEpsilon() reports the TRUE costs: per receiver ceil(d/wl) * eps',
//     all receivers eps * wl.
//   * kStrict (default) holds the union of all receivers (the strongest
//     observer) to eps. Spreading eps over all d dims (eps/d each) would give
//     each recovered dim a variance of about (b - a)^2 d^2 / eps^2. Instead,
//     as in Wang et al., "Collecting and Analyzing Multidimensional Data with
//     Local Differential Privacy" (ICDE 2019), only m = max(1, floor(eps /
//     2.5)) dims (at most d) are released, chosen uniformly without
//     replacement and independently of the data, each at eps' = eps / m;
//     the others carry the neutral 0.5. The recovery scales a released
//     element by d/m, which keeps every dim unbiased (an element is released
//     with probability m/d). Per-dim variance:
//         (d/m) ((b - a)/2)^2 coth^2(eps'/2) - (x - (a + b)/2)^2.
//     Writing eps' = eps/m, this is (d/eps) eps' coth^2(eps'/2) (b - a)^2/4
//     - (x - mid)^2, smallest at eps' ~ 2.18 (where sinh eps' = 2 eps');
//     Wang et al.'s 2.5 gives eps' in [2.5, 5) whenever m < d, within 1.5x
//     of that optimum. Against eps/d per dim the variance is multiplied by
//     about eps^2 coth^2(eps'/2) / (4 d m) (ignoring the (x - mid)^2 term):
//     1/55 at eps = 1, d = 64 (docs/privacy.md has measured figures).
//
// Partial encoding in strict mode: the data-independent sample of m dims is
// drawn ONCE per feature, together with the partition
// (AssignReleasedDimensions: the usual balanced partition, then every dim
// outside the sample marked kDimNotReleased). Receiver k gets the released
// dims of its bin. Every released dim reaches exactly one receiver, so the
// union of all receivers sees m elements at eps/m: eps. One receiver sees at
// most min(m, ceil(d/wl)) of them. Given that a dim is in its bin, the dim
// was released with probability m/d (sample and partition are independent),
// so the receiver's d/m-scaled recovery is unbiased for its bin as in the
// paper. With m < wl most receivers get no bit at all: that is what holding
// all receivers together to eps costs.
// The ledger must record OneBitCost::all_receivers in both modes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"
#include "nodefl/random/drbg.h"

namespace nodefl {

// Largest per-element budget accepted. The bit is drawn as U < p with a
// 53-bit uniform U, so a probability is realised only to within 2^-53. At
// eps' = 20 the smaller probability 1/(e^20 + 1) ~ 2e-9 is still realised to
// a relative 6e-8, so the stated ratio e^eps' holds; far beyond it the small
// probability would round to 0 and the ratio would be unbounded. eps' = 20
// per element is no privacy anyway.
inline constexpr double kMaxEpsilonPerBit = 20.0;

struct OneBitParams {
  float lower = 0.0f;                // a
  float upper = 1.0f;                // b
  double epsilon_per_element = 0.0;  // eps' of Eq. 26, per released element
  uint32_t workload = 1;             // wl(u): number of receivers the dims are split over
  uint32_t dims = 1;                 // d
  // m: dims released per feature, 1..d (paper: d; strict: max(1,
  // floor(eps / 2.5)), at most d). The recovery scales by d/m.
  uint32_t released_dims = 1;
};

// Per-dim budget of strict mode's sampling (Wang et al., ICDE 2019): m =
// max(1, floor(eps / kStrictEpsilonPerReleasedDim)).
inline constexpr double kStrictEpsilonPerReleasedDim = 2.5;

// receiver_of_dim entry of a dim that no receiver gets (strict mode).
inline constexpr uint32_t kDimNotReleased = UINT32_MAX;

// What a release of the encoder costs (true costs, see the header comment).
struct OneBitCost {
  // One receiver's partial encoding: min(m, ceil(d / wl)) * eps'. What the paper
  // (Theorem 4) calls the guarantee; it holds only if receivers never pool
  // what they got and no relay sees the messages.
  double per_receiver = 0.0;
  // All wl partial encodings together (or one full EncodeOneBit output):
  // m * eps' (paper: d * eps' = eps * wl; strict: eps). Record this one in
  // the ledger.
  double all_receivers = 0.0;
};

// Builds validated parameters. `epsilon` is the budget the caller means to
// spend on this feature; the mode decides what it is spent against and how
// many dims are released (header comment). workload > dims is allowed: each of `dims` receivers then gets
// one element and the remaining receivers get nothing (all 0.5).
// InvalidArgument if epsilon is not finite or <= 0, workload or dims is 0,
// lower/upper are not finite or lower >= upper, or the resulting eps' is
// outside (0, kMaxEpsilonPerBit] or makes recovered values overflow float.
Result<OneBitParams> MakeOneBitParams(PrivacyMode mode, double epsilon, uint32_t workload,
                                      uint32_t dims, float lower, float upper);

// True costs of `params` (InvalidArgument if the params are not valid).
Result<OneBitCost> OneBitEpsilon(const OneBitParams& params);

// Eq. 26: Pr(bit = 1) for an input at fraction (x - a)/(b - a) in [0, 1].
// Exposed because the multi-bit encoder applies the same mechanism per cell.
double OneBitProbabilityOfOne(double fraction, double epsilon_per_element);

// Splits receiver_of_dim.size() dimensions into `workload` bins: a uniformly
// random balanced partition. Which receivers get ceil(d/wl) rather than
// floor(d/wl) dims is itself chosen uniformly (selection sampling), then the
// labels are shuffled (Fisher-Yates), so every labelled balanced partition is
// equally likely. The partition does not depend on the data, so it costs no
// privacy and may travel in the clear. InvalidArgument if workload is 0, the
// span is empty or larger than 2^32 - 1; the DRBG's error if it failed.
Status AssignDimensionsToReceivers(Drbg& rng, uint32_t workload, Span<uint32_t> receiver_of_dim);

// The assignment EncodeOneBitPartial needs for `params`: the balanced
// partition above into params.workload bins, then, independently, all but a
// uniformly random params.released_dims of the dims (Knuth's selection
// sampling) set to kDimNotReleased. With released_dims == dims (paper mode)
// it is AssignDimensionsToReceivers and draws nothing more. Data
// independent, so it costs no privacy; draw it once per feature and use it
// for all receivers. InvalidArgument for bad params or a span whose size is
// not params.dims; the DRBG's error if it failed.
Status AssignReleasedDimensions(Drbg& rng, const OneBitParams& params, Span<uint32_t> receiver_of_dim);

// Encodes one feature (Eq. 26): params.released_dims elements chosen
// uniformly without replacement (all d in paper mode) become bits, the rest
// 0.5; outputs in {0, 0.5, 1}. Costs m * eps' (= OneBitCost::all_receivers)
// per call. x and encoded_out have params.dims
// elements (InvalidArgument otherwise); a non-finite x is InvalidArgument, an
// x outside [lower, upper] is OutOfRange (never clamped: clamping would hide
// a caller's wrong bounds). Nothing is drawn unless every input is valid; if
// the DRBG fails the output is overwritten with 0.5 and its error returned.
Status EncodeOneBit(Drbg& rng, const OneBitParams& params, Span<const float> x,
                    Span<float> encoded_out);

// Receiver `receiver`'s partial encoding: the encoded bits of the dims with
// receiver_of_dim[i] == receiver, 0.5 elsewhere; outputs in {0, 0.5, 1}.
// receiver_of_dim comes from AssignReleasedDimensions. Call it once per
// receiver per assignment (a resend must reuse the bytes of the first call):
// then every released dim is randomised exactly once and the wl calls
// together cost OneBitCost::all_receivers. Besides EncodeOneBit's checks,
// InvalidArgument if receiver_of_dim has the wrong size, an entry that is
// neither < workload nor kDimNotReleased, a number of released entries other
// than params.released_dims (e.g. a full partition in strict mode, which
// would release d > m elements and spend d/m times eps), receiver >=
// workload, or the
// receiver's bin exceeds ceil(d / wl) (that would break the per-receiver
// cost).
Status EncodeOneBitPartial(Drbg& rng, const OneBitParams& params, Span<const float> x,
                           Span<const uint32_t> receiver_of_dim, uint32_t receiver,
                           Span<float> encoded_out);

// Eq. 27/29 scaled by d/m: x'' = (d/m)(x' - 1/2)(b - a)(e^eps' + 1)/(e^eps'
// - 1) + (a + b)/2, exactly (a + b)/2 for 0.5. Paper mode (m = d): Eq. 29,
// unbiased for a sent element (Theorem 3). Strict mode: unbiased for every
// dim of a full encoding, and for every dim of the receiver's bin in a
// partial one (an element is released with probability m/d).
// Post-processing: costs nothing. encoded and recovered_out have
// params.dims elements and may be the same buffer. InvalidArgument (and
// nothing written) for a value other than 0, 0.5 or 1.
Status RecoverOneBit(const OneBitParams& params, Span<const float> encoded,
                     Span<float> recovered_out);

// Compact wire form of an encoding in {0, 0.5, 1}^d: two bits per element
// (0 -> 00, 1 -> 01, 0.5 -> 10), element i at bits 2(i mod 4) of byte i / 4.
// 32 times smaller than the floats, and the receiver needs no partition.
inline constexpr size_t OneBitPackedSize(size_t dims) { return (dims + 3) / 4; }

// InvalidArgument if out.size() != OneBitPackedSize(encoded.size()) or an
// element is not 0, 0.5 or 1.
Status PackOneBit(Span<const float> encoded, Span<uint8_t> out);

// Inverse of PackOneBit. InvalidArgument if packed.size() !=
// OneBitPackedSize(encoded_out.size()), a code is 11, or a padding bit is set.
Status UnpackOneBit(Span<const uint8_t> packed, Span<float> encoded_out);

}  // namespace nodefl
