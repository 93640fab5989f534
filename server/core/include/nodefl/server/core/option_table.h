// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Typed `key = value` options over one plain struct, and the type-erased
// OptionGroup through which a job adds its own options to the server's
// configuration (server/jobs registers one group per algorithm). One table
// per struct drives parsing, --help and FormatConfig, so the three cannot
// disagree about which keys exist.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "nodefl/server/core/log.h"

namespace nodefl::server {

struct ServerConfig;

template <class T>
using OptionField = std::variant<std::string T::*, bool T::*, uint16_t T::*, uint32_t T::*, uint64_t T::*,
                                 double T::*, LogLevel T::*, LogFormat T::*>;

template <class T>
struct OptionSpec {
  std::string_view name;
  OptionField<T> field;
  std::string_view help;
};

// One value from its text form: "" on success, else what is wrong (without
// the key or location, which the caller adds).
std::string ParseOptionValue(std::string_view text, std::string* out);
std::string ParseOptionValue(std::string_view text, bool* out);  // true | false
std::string ParseOptionValue(std::string_view text, uint16_t* out);
std::string ParseOptionValue(std::string_view text, uint32_t* out);
std::string ParseOptionValue(std::string_view text, uint64_t* out);
std::string ParseOptionValue(std::string_view text, double* out);
std::string ParseOptionValue(std::string_view text, LogLevel* out);
std::string ParseOptionValue(std::string_view text, LogFormat* out);

// The value as text, in the form ParseOptionValue accepts.
std::string FormatOptionValue(const std::string& value);
std::string FormatOptionValue(bool value);
std::string FormatOptionValue(uint16_t value);
std::string FormatOptionValue(uint32_t value);
std::string FormatOptionValue(uint64_t value);
std::string FormatOptionValue(double value);
std::string FormatOptionValue(LogLevel value);
std::string FormatOptionValue(LogFormat value);

template <class T>
std::string ParseOption(const OptionSpec<T>& spec, std::string_view text, T& values) {
  return std::visit([&](auto member) { return ParseOptionValue(text, &(values.*member)); }, spec.field);
}

template <class T>
std::string FormatOption(const OptionSpec<T>& spec, const T& values) {
  return std::visit([&](auto member) { return FormatOptionValue(values.*member); }, spec.field);
}

// Options a job adds to the configuration. ServerConfig holds a copy of
// every registered group (ServerConfig::job_options); the job reads its own
// typed values back from it (see server/jobs/job_catalog.h).
class OptionGroup {
 public:
  virtual ~OptionGroup() = default;
  virtual std::unique_ptr<OptionGroup> Clone() const = 0;

  virtual size_t size() const = 0;
  virtual std::string_view key(size_t i) const = 0;
  virtual std::string_view help(size_t i) const = 0;
  // "" or what is wrong with `text` for key i.
  virtual std::string Set(size_t i, std::string_view text) = 0;
  virtual std::string Get(size_t i) const = 0;
  virtual std::string Default(size_t i) const = 0;
  // Range and consistency checks: "" or "<key>: <problem>". `config` is the
  // whole configuration, for checks that involve server keys (e.g. `job`).
  virtual std::string Validate(const ServerConfig& config) const = 0;
  // True when this group's job understands `job` (the value of the `job` key).
  virtual bool ProvidesJob(std::string_view job) const = 0;
};

// An OptionGroup over a struct T with a static table of specs. `Validate`
// and `ProvidesJob` are plain functions so that a job keeps its checks next
// to its options.
template <class T>
class TableOptionGroup final : public OptionGroup {
 public:
  using ValidateFn = std::string (*)(const T& values, const ServerConfig& config);
  using ProvidesFn = bool (*)(std::string_view job);

  TableOptionGroup(std::span<const OptionSpec<T>> specs, ValidateFn validate, ProvidesFn provides)
      : specs_(specs), validate_(validate), provides_(provides) {}

  T& values() { return values_; }
  const T& values() const { return values_; }

  std::unique_ptr<OptionGroup> Clone() const override { return std::make_unique<TableOptionGroup>(*this); }
  size_t size() const override { return specs_.size(); }
  std::string_view key(size_t i) const override { return specs_[i].name; }
  std::string_view help(size_t i) const override { return specs_[i].help; }
  std::string Set(size_t i, std::string_view text) override { return ParseOption(specs_[i], text, values_); }
  std::string Get(size_t i) const override { return FormatOption(specs_[i], values_); }
  std::string Default(size_t i) const override {
    static const T defaults{};
    return FormatOption(specs_[i], defaults);
  }
  std::string Validate(const ServerConfig& config) const override {
    return validate_ == nullptr ? std::string() : validate_(values_, config);
  }
  bool ProvidesJob(std::string_view job) const override { return provides_ != nullptr && provides_(job); }

 private:
  std::span<const OptionSpec<T>> specs_;
  ValidateFn validate_;
  ProvidesFn provides_;
  T values_{};
};

// A copyable list of option groups (each copy clones the groups).
class OptionGroups {
 public:
  OptionGroups() = default;
  OptionGroups(const OptionGroups& other) { *this = other; }
  OptionGroups& operator=(const OptionGroups& other) {
    if (this == &other) return *this;
    groups_.clear();
    for (const auto& g : other.groups_) groups_.push_back(g->Clone());
    return *this;
  }
  OptionGroups(OptionGroups&&) = default;
  OptionGroups& operator=(OptionGroups&&) = default;

  void Add(std::unique_ptr<OptionGroup> group) { groups_.push_back(std::move(group)); }
  size_t size() const { return groups_.size(); }
  OptionGroup& operator[](size_t i) { return *groups_[i]; }
  const OptionGroup& operator[](size_t i) const { return *groups_[i]; }

  // The group of type G (the first one), or nullptr.
  template <class G>
  G* Find() {
    for (auto& g : groups_) {
      if (auto* typed = dynamic_cast<G*>(g.get())) return typed;
    }
    return nullptr;
  }
  template <class G>
  const G* Find() const {
    for (const auto& g : groups_) {
      if (const auto* typed = dynamic_cast<const G*>(g.get())) return typed;
    }
    return nullptr;
  }

 private:
  std::vector<std::unique_ptr<OptionGroup>> groups_;
};

}  // namespace nodefl::server
