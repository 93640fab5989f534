// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The contract of JOB_KIND_SECURE_AGGREGATE: secure aggregation on its own,
// to test and measure it over the real stack (server: server/jobs
// secure_aggregate_job.h; device: sdk/secagg aggregate_role.h). All
// integers little endian.
//
// Round 1. JobStart.parameters = SecureAggregateParameters. Each device
// draws and announces its job key (seal/job_keys.h), then takes part in
// the aggregations the server runs (aggregation_format.h): it keys its mask
// peers on demand (PeerKeyRequest) and seals its peer messages with the
// pair's job keys. Its input is public and synthetic (SyntheticInput), so
// the server can check every sum it unmasks: this job measures the
// protocol, it protects nothing.
// Round 2. The device reports (JobReport: sent = aggregations it finished
// its part of, rejected = records and messages it refused) and is done.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

namespace nodefl::secagg {

inline constexpr size_t kAggregateSaltBytes = 16;

struct SecureAggregateParameters {
  uint8_t salt[kAggregateSaltBytes] = {};
  uint64_t input_seed = 0;
};
inline constexpr size_t kSecureAggregateParametersBytes = kAggregateSaltBytes + 8;

void EncodeSecureAggregateParameters(const SecureAggregateParameters& p,
                                     uint8_t (&out)[kSecureAggregateParametersBytes]);
// kInvalidArgument for a wrong size.
Result<SecureAggregateParameters> DecodeSecureAggregateParameters(ConstByteSpan bytes);

// Word i of `device`'s input to aggregation `aggregation`: a public hash of
// the four, so any party can recompute the expected sum.
uint32_t SyntheticInput(uint64_t seed, uint32_t aggregation, uint32_t device, uint32_t i);

}  // namespace nodefl::secagg
