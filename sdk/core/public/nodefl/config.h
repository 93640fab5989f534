// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every device-local fixed capacity of the SDK, in one place, in the style
// of MbedTLS's configuration: each value is a macro with a default that a
// port overrides, either
//   - with a user configuration header: build with
//     NODEFL_USER_CONFIG_FILE="my_nodefl_config.h" (the CMake cache variable
//     of the same name does this for the SDK and everything that links it),
//     whose #defines are read before the defaults below; or
//   - with -DNODEFL_MAX_ROLES=4 and the like on the command line.
// Every translation unit that includes SDK headers (the SDK's own and the
// app's) must see the same values: the constants size members of SDK
// classes, so a mismatch is an ODR violation, not a smaller device.
//
// The C++ API keeps its names (DeviceSession::kMaxRoles, ...), defined from
// these macros; code uses the constants, not the macros.
//
// Not here: bounds the peer must agree on. Frame and field sizes
// (protocol/limits.h, envelope.options) and the limits of each job's
// parameters and payloads (protocol/<algorithm>/*_format.h: kMaxBins,
// kMaxPendingWalks, kMaxCompareWidth, ...) are part of the contract between
// devices and the server and stay in sdk/protocol; changing one on a
// device alone would make it reject or send what its peers do not expect.
// Memory that grows with the graph (neighbours, walk slots, sessions) is
// not fixed either: each role plans it at run time (porting.md, "Sizing a
// device").
#pragma once

#if defined(NODEFL_USER_CONFIG_FILE)
#include NODEFL_USER_CONFIG_FILE
#endif

// sdk/device: roles one DeviceSession dispatches to
// (DeviceSession::kMaxRoles). Costs one pointer per slot inside every
// DeviceSession.
#ifndef NODEFL_MAX_ROLES
#define NODEFL_MAX_ROLES 8
#endif

// sdk/device: jobs a DeviceSession routes messages for at once (a further
// JobStart makes it forget the oldest; late messages for that job are then
// refused). Costs 16 bytes per slot (job id + role pointer) inside every
// DeviceSession.
#ifndef NODEFL_MAX_ACTIVE_JOBS
#define NODEFL_MAX_ACTIVE_JOBS 8
#endif

// sdk/echo, sdk/fedwalk (walk role), sdk/compare: peer-certificate requests
// one role keeps in flight. Costs no memory; it bounds the server's answer
// queue for this device and the certificate verification work the device
// faces at one moment.
#ifndef NODEFL_MAX_OUTSTANDING_KEY_REQUESTS
#define NODEFL_MAX_OUTSTANDING_KEY_REQUESTS 64
#endif

// sdk/compare: first messages of comparison sessions that arrive before
// the server's start record and are held until it does
// (compare::kEarlyMessages). Costs about 140 bytes per slot inside every
// SecureCompareRole; when all are taken, a further early message is
// dropped and its session fails.
#ifndef NODEFL_COMPARE_EARLY_MESSAGES
#define NODEFL_COMPARE_EARLY_MESSAGES 8
#endif

// sdk/tls: PEM input without its terminating NUL is copied to a stack
// buffer of this size to add one (tls::kMaxPemCopyBytes). Costs this many
// bytes of stack while credentials load; larger PEM must carry its NUL or
// come as DER.
#ifndef NODEFL_MAX_PEM_COPY_BYTES
#define NODEFL_MAX_PEM_COPY_BYTES 4096
#endif

// Zero would compile into arrays of no element or a role that can never
// ask for a key; refuse it here rather than at the first job.
static_assert(NODEFL_MAX_ROLES >= 1, "NODEFL_MAX_ROLES must be at least 1");
static_assert(NODEFL_MAX_ACTIVE_JOBS >= 1, "NODEFL_MAX_ACTIVE_JOBS must be at least 1");
static_assert(NODEFL_MAX_OUTSTANDING_KEY_REQUESTS >= 1, "NODEFL_MAX_OUTSTANDING_KEY_REQUESTS must be at least 1");
static_assert(NODEFL_COMPARE_EARLY_MESSAGES >= 1, "NODEFL_COMPARE_EARLY_MESSAGES must be at least 1");
static_assert(NODEFL_MAX_PEM_COPY_BYTES >= 2, "NODEFL_MAX_PEM_COPY_BYTES must hold a character and its NUL");
