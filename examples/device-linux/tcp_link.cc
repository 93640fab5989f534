// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "tcp_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace nodefl::device_linux {
namespace {

// One address: connect without blocking, wait for it up to `timeout_ms`.
int ConnectOne(const addrinfo& a, int timeout_ms, std::string* error) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (::connect(fd, a.ai_addr, a.ai_addrlen) != 0 && errno != EINPROGRESS) {
    *error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  int so_error = 0;
  socklen_t len = sizeof so_error;
  if (ready == 0) {
    *error = "connect: timed out after " + std::to_string(timeout_ms) + " ms";
  } else if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
    *error = std::string("connect: ") + std::strerror(errno);
  } else if (so_error != 0) {
    *error = std::string("connect: ") + std::strerror(so_error);
  } else {
    const int one = 1;
    // Frames are small and the protocol waits for answers: no Nagle delay.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  }
  ::close(fd);
  return -1;
}

}  // namespace

int ConnectTcp(const std::string& host, uint16_t port, int timeout_ms, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) fd = ConnectOne(*a, timeout_ms, error);
  ::freeaddrinfo(found);
  return fd;
}

bool SplitHostPort(const std::string& text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  std::string h = text.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  }
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const unsigned long v = std::strtoul(p.c_str(), &end, 10);
  if (p[0] < '0' || p[0] > '9' || *end != '\0' || v == 0 || v > 65535) return false;
  *host = h;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace nodefl::device_linux
