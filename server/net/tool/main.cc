// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-server: the coordination server. Configuration comes from
// `--config FILE` and `--key value` flags (flags win); `--help` lists every
// key. Logs are structured lines on stderr.
#include <cstdio>
#include <string>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/log.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/host/net/process_limits.h"
#include "nodefl/server/net/server.h"

int main(int argc, char** argv) {
  using namespace nodefl::server;
  ServerConfig config = jobs::DefaultServerConfigWithJobs();
  const ConfigStatus parsed = ApplyFlags(argc, argv, config);
  if (parsed.help_requested) {
    std::printf(
        "usage: nodefl-server [--config FILE] [--key value ...]\n\n"
        "The nodefl coordination server: devices connect over mutually authenticated TLS\n"
        "(certificates issued by nodefl-ca), register, exchange end-to-end sealed messages\n"
        "through the relay, and take part in jobs. Stops cleanly on SIGINT/SIGTERM.\n\n"
        "Every key can be set in the config file (key = value) or as a flag:\n\n%s",
        jobs::JobsHelpText(jobs::DefaultServerConfigWithJobs()).c_str());
    return 0;
  }
  if (!parsed.ok) {
    std::fprintf(stderr, "nodefl-server: %s (see --help)\n", parsed.message.c_str());
    return 2;
  }
  if (const ConfigStatus valid = ValidateConfig(config); !valid.ok) {
    std::fprintf(stderr, "nodefl-server: %s (see --help)\n", valid.message.c_str());
    return 2;
  }
  Logger log(config.log_level, config.log_format);
  std::string note;
  const uint64_t files = nodefl::host::net::RaiseOpenFileLimit(&note);
  if (files < uint64_t{config.max_devices} + 64) {
    log.Warn("open_file_limit", {{"limit", files}, {"max_devices", config.max_devices}, {"note", note}});
  }
  std::string error;
  auto server = net::Server::Create(config, log, &error);
  if (!server) {
    log.Error("startup_failed", {{"error", error}});
    std::fprintf(stderr, "nodefl-server: %s\n", error.c_str());
    return 1;
  }
  // A line on stdout that scripts can wait for (the port matters with 0).
  std::printf("nodefl-server listening on %s:%u\n", config.listen_address.c_str(), server->port());
  std::fflush(stdout);
  return server->Run();
}
