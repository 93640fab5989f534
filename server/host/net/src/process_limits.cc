// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/net/process_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace nodefl::host::net {

uint64_t RaiseOpenFileLimit(std::string* note) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    *note = std::string("getrlimit: ") + std::strerror(errno);
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return raised.rlim_cur;
    *note = std::string("setrlimit: ") + std::strerror(errno);
  }
  return limit.rlim_cur;
}

namespace {
uint64_t ProcStatusKiB(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n, nullptr, 10);
  }
  return 0;
}
}  // namespace

uint64_t CurrentRssKiB() { return ProcStatusKiB("VmRSS:"); }
uint64_t PeakRssKiB() { return ProcStatusKiB("VmHWM:"); }

}  // namespace nodefl::host::net
