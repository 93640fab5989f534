// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A port's user configuration file, as config_override_test.cc is built
// with it (NODEFL_USER_CONFIG_FILE).
#pragma once

#define NODEFL_MAX_OUTSTANDING_KEY_REQUESTS 5
