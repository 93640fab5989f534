// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// EcScratch: the MbedTLS objects of one P-256 operation (a key generation,
// an ECDH): a group, a point, a scalar and a shared secret, initialised on
// construction and freed on destruction, which also zeroes their limbs
// (mbedtls_mpi_free wipes before releasing). Shared by the modules that
// draw or agree keys (sdk/seal job keys, sdk/secagg round keys).
#pragma once

#include <mbedtls/ecp.h>

namespace nodefl::crypto {

class EcScratch {
 public:
  EcScratch() {
    mbedtls_ecp_group_init(&group);
    mbedtls_ecp_point_init(&point);
    mbedtls_mpi_init(&scalar);
    mbedtls_mpi_init(&shared);
  }
  ~EcScratch() {
    mbedtls_mpi_free(&shared);
    mbedtls_mpi_free(&scalar);
    mbedtls_ecp_point_free(&point);
    mbedtls_ecp_group_free(&group);
  }
  EcScratch(const EcScratch&) = delete;
  EcScratch& operator=(const EcScratch&) = delete;

  mbedtls_ecp_group group;
  mbedtls_ecp_point point;
  mbedtls_mpi scalar;
  mbedtls_mpi shared;
};

}  // namespace nodefl::crypto
