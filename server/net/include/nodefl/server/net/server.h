// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Server: the nodefl coordination server. Owns the io_context and its
// threads, the TLS configuration (MbedTLS, mutual authentication against the
// deployment CA), the registry, the relay, the peer-certificate store, the
// acceptor and the job runner. Stops cleanly on SIGINT/SIGTERM or Stop():
// stop accepting, tell every device Goodbye, give connections a moment to
// flush, then join the threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/log.h"

namespace nodefl::server::net {

class Server {
 public:
  // Loads TLS material and certificates; nullptr with `*error` on failure.
  static std::unique_ptr<Server> Create(const ServerConfig& config, Logger& log, std::string* error);
  ~Server();

  // Serves until stopped (signal, Stop(), or `exit_after_jobs` reached).
  // Returns the process exit status: 0, or 1 when a finished job was not
  // verified.
  int Run();
  // Thread-safe; may be called before Run() returns or from a signal path.
  void Stop();
  // The bound port (useful with listen_port = 0). Valid after Create.
  uint16_t port() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nodefl::server::net
