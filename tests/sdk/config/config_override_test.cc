// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Built with -DNODEFL_MAX_ROLES=3 and with NODEFL_USER_CONFIG_FILE naming
// config_override_user.h (NODEFL_MAX_OUTSTANDING_KEY_REQUESTS 5): a port's
// overrides, both ways, must reach the C++ constants, and a value nobody
// overrides keeps its default. The checks are compile-time; the binary
// only exists so CTest lists the check. It links no SDK library: those are
// built with the defaults, and mixing the two in one program would break
// the one-definition rule that nodefl/config.h warns about.
#include "nodefl/compare/compare_role.h"
#include "nodefl/config.h"
#include "nodefl/device/device_session.h"
#include "nodefl/echo/neighbour_echo.h"
#include "nodefl/tls/credentials.h"

namespace {

static_assert(NODEFL_MAX_ROLES == 3, "the -D override reaches the macro");
static_assert(nodefl::device::DeviceSession::kMaxRoles == 3, "... and the constant");

static_assert(NODEFL_MAX_OUTSTANDING_KEY_REQUESTS == 5, "the user config file is read");
static_assert(nodefl::echo::kEchoMaxOutstandingKeyRequests == 5, "... by the echo role");
static_assert(nodefl::compare::kCompareMaxOutstandingKeyRequests == 5, "... and the compare role");

// Untouched values keep their defaults.
static_assert(NODEFL_MAX_ACTIVE_JOBS == 8, "default kept");
static_assert(nodefl::compare::kEarlyMessages == 8, "default kept");
static_assert(nodefl::tls::kMaxPemCopyBytes == 4096, "default kept");

}  // namespace

int main() { return nodefl::device::DeviceSession::kMaxRoles == 3 ? 0 : 1; }
