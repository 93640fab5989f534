// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/os_random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace nodefl::server {

void FillFromOsEntropy(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // A salt from anything weaker could repeat: refuse to go on.
      std::fprintf(stderr, "nodefl: getrandom failed (errno %d); cannot draw a job salt\n", errno);
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace nodefl::server
