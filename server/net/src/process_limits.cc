// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/process_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace nodefl::server::net {

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

}  // namespace nodefl::server::net
