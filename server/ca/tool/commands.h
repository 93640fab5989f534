// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The nodefl-ca subcommands. Each takes the words after its name, prints
// errors to stderr and returns the process exit code: 0 success, 1 failure
// while working, 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace nodefl::ca {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

int RunInit(const std::vector<std::string>& args);
int RunServer(const std::vector<std::string>& args);
int RunDevices(const std::vector<std::string>& args);

extern const char kUsage[];
extern const char kInitUsage[];
extern const char kServerUsage[];
extern const char kDevicesUsage[];

}  // namespace nodefl::ca
