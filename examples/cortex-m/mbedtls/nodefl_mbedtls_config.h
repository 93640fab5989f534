// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// MbedTLS 2.28 configuration for nodefl devices on bare metal (Cortex-M).
// It takes the place of MbedTLS's own mbedtls/config.h: the firmware's
// deps build (examples/cortex-m/deps) compiles MbedTLS with it and installs
// it as mbedtls/config.h in the target prefix, so the library and every
// translation unit that includes an MbedTLS header (the SDK, the firmware)
// see the same structure layouts. Never mix it with another configuration.
//
// What the SDK needs (grep sdk/ for mbedtls_):
//   random/    CTR_DRBG over AES-256, seeded from the port's EntropySource
//              (the SDK's own callback: no MBEDTLS_ENTROPY_C)
//   crypto/    SHA-256
//   protocol/  SHA-256 (chunk digests)
//   seal/      ECDH on P-256, HKDF-SHA-256, AES-256-GCM, X.509 parsing and
//              chain verification of peer certificates (ECDSA P-256)
//   ot/        P-256 point arithmetic (base OT), AES-ECB (IKNP's PRG)
//   tls/       TLS 1.2 client, ECDHE-ECDSA with AES-GCM, PEM or DER
//              credentials
// Nothing else: no RSA, no DHM, no CBC/CCM/ChaCha, no SHA-1/MD5, no
// filesystem (credentials are bytes from the app), no sockets (the pump
// moves ciphertext), no threads, no clock (see MBEDTLS_HAVE_TIME below).
//
// Memory: MBEDTLS_PLATFORM_MEMORY + MBEDTLS_MEMORY_BUFFER_ALLOC_C. The board
// calls mbedtls_memory_buffer_alloc_init() over a static array before any
// X.509, bignum or TLS call; until then every MbedTLS allocation fails
// (MBEDTLS_PLATFORM_NO_STD_FUNCTIONS: the default allocator is MbedTLS's
// "uninitialised" one, never calloc), so nothing reaches newlib's malloc.
#ifndef NODEFL_MBEDTLS_CONFIG_H
#define NODEFL_MBEDTLS_CONFIG_H

// ---- system support ---------------------------------------------------------
#define MBEDTLS_HAVE_ASM
// Cortex-M4 has UMULL/UMAAL: bignum's inline assembly for ARMv7E-M applies.
// No MBEDTLS_HAVE_TIME / MBEDTLS_HAVE_TIME_DATE: the board has a tick
// counter but no calendar clock, so X.509 validity dates are NOT checked on
// the device (a board with a trusted RTC defines both and provides
// mbedtls_time / mbedtls_platform_gmtime_r). TLS 1.2 needs no time.
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_NO_STD_FUNCTIONS
// X.509 name formatting and error strings need snprintf; newlib-nano's
// formats into the caller's buffer without allocating. With
// MBEDTLS_PLATFORM_NO_STD_FUNCTIONS platform.h includes no libc header, so
// the declarations come from here (stdlib.h for the exit() its default
// mbedtls_exit names; declarations only, nothing is linked by them).
#include <stdio.h>
#include <stdlib.h>
#define MBEDTLS_PLATFORM_SNPRINTF_MACRO snprintf
#define MBEDTLS_MEMORY_BUFFER_ALLOC_C
// Sizes the per-block header; 8 keeps doubles and 64-bit counters aligned.
#define MBEDTLS_MEMORY_ALIGN_MULTIPLE 8
// The entropy is the port's (nodefl::EntropySource); MbedTLS's own entropy
// module and its platform sources are not compiled.
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_DEPRECATED_REMOVED

// ---- symmetric primitives --------------------------------------------------
#define MBEDTLS_AES_C
// Tables in flash (const) instead of 8 KiB of RAM built at first use, and a
// quarter of them (~2 KiB of flash): rotations cost a few cycles per round.
#define MBEDTLS_AES_ROM_TABLES
#define MBEDTLS_AES_FEWER_TABLES
#define MBEDTLS_CIPHER_C
#define MBEDTLS_GCM_C
#define MBEDTLS_CTR_DRBG_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
// The rolled-up compression loop: ~1.5 KiB less flash, ~30 % slower.
#define MBEDTLS_SHA256_SMALLER
#define MBEDTLS_HKDF_C

// ---- public-key primitives ---------------------------------------------------
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_NIST_OPTIM
// Smaller window and no fixed-point tables: less RAM per multiplication
// (the comb table for a window of 2 is 4 points), slower scalar products.
#define MBEDTLS_ECP_WINDOW_SIZE 2
#define MBEDTLS_ECP_FIXED_POINT_OPTIM 0
// P-256 only: 32-byte numbers, but room for the products bignum makes.
#define MBEDTLS_MPI_MAX_SIZE 64
#define MBEDTLS_MPI_WINDOW_SIZE 2
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_ECDSA_DETERMINISTIC
#define MBEDTLS_HMAC_DRBG_C  // deterministic ECDSA's nonces
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C

// ---- X.509 and TLS ---------------------------------------------------------
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
// sdk/seal checks that a peer's certificate allows key agreement
// (mbedtls_x509_crt_check_key_usage); TLS checks the server's usage too.
#define MBEDTLS_X509_CHECK_KEY_USAGE
#define MBEDTLS_X509_CHECK_EXTENDED_KEY_USAGE
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
// sdk/tls/src/config.cc turns renegotiation off at run time through
// mbedtls_ssl_conf_renegotiation, which exists only with this option.
#define MBEDTLS_SSL_RENEGOTIATION
#define MBEDTLS_SSL_ENCRYPT_THEN_MAC
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
// Only the suite the device offers and the server accepts: ECDHE-ECDSA
// with AES-128-GCM and SHA-256. The SDK also lists AES-256-GCM-SHA384,
// which needs SHA-512; without MBEDTLS_SHA512_C MbedTLS leaves it out of
// the ClientHello.
#define MBEDTLS_SSL_CIPHERSUITES MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
// MbedTLS allocates one record buffer of each size per connection (plus
// about 0.3 KiB each). The device writes frames of at most a few KiB, so its
// outgoing records stay under 8 KiB; incoming records keep TLS's 16 KiB
// maximum, because the server (Debian's MbedTLS) may fill a record with
// several frames and a device that could not take it would fail the
// connection.
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN 8192

#include "mbedtls/check_config.h"

#endif  // NODEFL_MBEDTLS_CONFIG_H
