// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Typed access to one job's options inside ServerConfig::job_options. Each
// algorithm declares its options struct T and a group maker; Options<T>()
// finds (or, on a mutable config, installs) that group and returns its values.
#pragma once

#include <memory>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/option_table.h"

namespace nodefl::server::jobs {

// Specialised per options struct (in the algorithm's *_kind.cc).
template <class T>
std::unique_ptr<TableOptionGroup<T>> MakeOptionGroup();

template <class T>
T& Options(ServerConfig& config) {
  if (auto* group = config.job_options.Find<TableOptionGroup<T>>()) return group->values();
  auto group = MakeOptionGroup<T>();
  T& values = group->values();
  config.job_options.Add(std::move(group));
  return values;
}

// On a const config without the group: the defaults.
template <class T>
const T& Options(const ServerConfig& config) {
  if (const auto* group = config.job_options.Find<TableOptionGroup<T>>()) return group->values();
  static const T defaults{};
  return defaults;
}

}  // namespace nodefl::server::jobs
