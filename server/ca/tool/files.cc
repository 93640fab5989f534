// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace nodefl::ca {

bool WriteNewFile(const std::string& path, const void* data, size_t size, mode_t mode,
                  std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = errno == EEXIST ? path + " already exists (nodefl-ca never overwrites)"
                             : "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  // The umask may have cleared bits of `mode`; keys must be exactly 0600.
  ::fchmod(fd, mode);
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write " + path + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(path.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    ::unlink(path.c_str());
    return false;
  }
  return true;
}

bool WriteNewFile(const std::string& path, const std::string& text, mode_t mode,
                  std::string* error) {
  return WriteNewFile(path, text.data(), text.size(), mode, error);
}

bool ReadWholeFile(const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "cannot read " + path;
    return false;
  }
  return true;
}

bool EnsureDirectory(const std::string& path, mode_t mode, std::string* error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  if (std::filesystem::exists(path, ec)) {
    *error = path + " exists and is not a directory";
    return false;
  }
  std::filesystem::create_directories(path, ec);
  if (ec) {
    *error = "cannot create directory " + path + ": " + ec.message();
    return false;
  }
  ::chmod(path.c_str(), mode);
  return true;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace nodefl::ca
