// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-ca: creates the deployment CA and issues the server's and the
// devices' certificates (docs/security.md).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  using namespace nodefl::ca;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (command == "init") return RunInit(args);
  if (command == "server") return RunServer(args);
  if (command == "devices") return RunDevices(args);
  std::fprintf(stderr, "nodefl-ca: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return kExitUsage;
}
