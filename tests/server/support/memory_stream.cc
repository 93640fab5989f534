// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "memory_stream.h"

#include <algorithm>

namespace nodefl::testing {

struct MemoryStream::Shared {
  explicit Shared(const boost::asio::any_io_executor& executor)
      : first_to_second(executor), second_to_first(executor) {}
  Pipe first_to_second;
  Pipe second_to_first;
};

MemoryStream::Ends MemoryStream::Pair(const boost::asio::any_io_executor& executor, const std::string& first_name,
                                      const std::string& second_name) {
  auto shared = std::make_shared<Shared>(executor);
  std::unique_ptr<MemoryStream> first(new MemoryStream(shared, executor, true, second_name));
  std::unique_ptr<MemoryStream> second(new MemoryStream(shared, executor, false, first_name));
  return {std::move(first), std::move(second)};
}

MemoryStream::MemoryStream(std::shared_ptr<Shared> shared, boost::asio::any_io_executor executor, bool first,
                           std::string remote_name)
    : shared_(std::move(shared)),
      executor_(std::move(executor)),
      first_(first),
      remote_name_(std::move(remote_name)) {}

MemoryStream::~MemoryStream() { Close(); }

MemoryStream::Pipe& MemoryStream::in() { return first_ ? shared_->second_to_first : shared_->first_to_second; }
MemoryStream::Pipe& MemoryStream::out() { return first_ ? shared_->first_to_second : shared_->second_to_first; }

bool MemoryStream::Trips(uint64_t& countdown) {
  if (countdown == 0) return false;
  return --countdown == 0;
}

void MemoryStream::Close() {
  if (closed_) return;
  closed_ = true;
  // This end's pending read ends; the other end reads what was written,
  // then sees the end of the stream.
  in().broken = true;
  out().ended = true;
  in().readable.Wake();
  out().readable.Wake();
}

void MemoryStream::Reset() {
  for (Pipe* p : {&in(), &out()}) {
    p->broken = true;
    p->readable.Wake();
  }
}

boost::asio::awaitable<Result<size_t>> MemoryStream::ReadSome(ByteSpan out_bytes) {
  if (closed_) co_return Status::Aborted();
  if (Trips(fail_read_in_)) {
    Reset();
    co_return Status::Aborted();
  }
  Pipe& pipe = in();
  while (true) {
    if (pipe.broken) co_return Status::Aborted();
    if (!pipe.bytes.empty()) break;
    if (pipe.ended) co_return Status::Aborted();  // end of stream
    co_await pipe.readable.Wait();
  }
  size_t n = std::min(out_bytes.size(), pipe.bytes.size());
  if (read_chunk_ != 0) n = std::min(n, read_chunk_);
  std::copy_n(pipe.bytes.begin(), n, out_bytes.data());
  pipe.bytes.erase(pipe.bytes.begin(), pipe.bytes.begin() + static_cast<std::ptrdiff_t>(n));
  bytes_read_ += n;
  co_return n;
}

boost::asio::awaitable<Status> MemoryStream::WriteAll(ConstByteSpan data) {
  if (closed_) co_return Status::Aborted();
  if (Trips(fail_write_in_)) {
    Reset();
    co_return Status::Aborted();
  }
  Pipe& pipe = out();
  // Writing into a reset pipe, or to an end that closed, fails as writing
  // to a reset socket does.
  if (pipe.broken || in().ended) co_return Status::Aborted();
  const size_t n = static_cast<size_t>(std::min<uint64_t>(data.size(), write_budget_));
  pipe.bytes.insert(pipe.bytes.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
  bytes_written_ += n;
  if (write_budget_ != UINT64_MAX) write_budget_ -= n;
  pipe.readable.Wake();
  if (n < data.size() || write_budget_ == 0) {
    Close();
    if (n < data.size()) co_return Status::Aborted();
  }
  co_return Status::Ok();
}

}  // namespace nodefl::testing
