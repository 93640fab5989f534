// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/platform/host_platform.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>

namespace nodefl::host {

Status HostEntropyFill(void* /*context*/, Span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable();
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

void HostStderrLog(void* context, LogLevel level, const char* line) {
  const char* prefix = static_cast<const char*>(context);
  std::fprintf(stderr, "[%s]%s%s %s\n", LogLevelName(level), prefix ? " " : "", prefix ? prefix : "",
               line);
}

Platform MakeHostPlatform(LogLevel min_log_level) {
  Platform p;
  p.entropy.fill = &HostEntropyFill;
  p.log.write = &HostStderrLog;
  p.log.min_level = min_log_level;
  return p;
}

}  // namespace nodefl::host
