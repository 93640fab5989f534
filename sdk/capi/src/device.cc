// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The config's defaults, its validation, and a device's creation and
// destruction (nodefl.h). Everything the config points to is copied here;
// every refusal names the field and why.
#include <algorithm>
#include <cstddef>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "device_handle.h"
#include "nodefl/config.h"

namespace nodefl::capi {
namespace {

// The first version's config: every later one only grows at the end.
// Version 1.0's nodefl_config ended with log_level (1.1 added the log
// callback after it): the smallest struct_size this library reads.
constexpr size_t kConfigSizeV1 = offsetof(nodefl_config, log_level) + sizeof(int32_t);

constexpr const char* kJobs[] = {"neighbour-echo", "fedwalk-hct",    "fedwalk",         "fedwalk-histograms",
                                 "secure-compare", "lumos-trees",    "secure-aggregate"};

// A refusal on its way to the caller's buffer.
struct Refusal {
  nodefl_status status = NODEFL_OK;
  std::string text;
  bool ok() const { return status == NODEFL_OK; }
};

Refusal Refuse(nodefl_status status, std::string text) { return Refusal{status, std::move(text)}; }

bool KnownJob(const std::string& job) {
  return std::any_of(std::begin(kJobs), std::end(kJobs), [&job](const char* known) { return job == known; });
}

bool FiniteNonNegative(double x) { return std::isfinite(x) && x >= 0; }

void Defaults(nodefl_config* c) {
  std::memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->label = -1;
  c->train_hidden = 16;
  c->train_out = 16;
  const PrivacyBudget budget;
  c->budget_job_epsilon = budget.job_epsilon;
  c->budget_lifetime_epsilon = budget.lifetime_epsilon;
  c->handshake_timeout_ms = 30000;
  c->log_level = NODEFL_LOG_WARNING;
}

// The caller's config over the defaults, refusing sizes this library does
// not know how to read.
Refusal ReadConfig(const nodefl_config* in, nodefl_config* out) {
  Defaults(out);
  const size_t size = in->struct_size;
  if (size < kConfigSizeV1) {
    return Refuse(NODEFL_ERR_VERSION, "config.struct_size " + std::to_string(size) + " is below the smallest this " +
                                          "library reads (" + std::to_string(kConfigSizeV1) +
                                          "): call nodefl_config_init(&config, sizeof config)");
  }
  // Fields of a newer header than this library must be left at zero (their
  // defaults): a set one would be ignored silently otherwise.
  const auto* bytes = reinterpret_cast<const uint8_t*>(in);
  for (size_t i = sizeof *out; i < size; ++i) {
    if (bytes[i] != 0) {
      return Refuse(NODEFL_ERR_VERSION, "config sets fields this library (version " +
                                            std::to_string(nodefl_capi_version()) + ") does not know");
    }
  }
  std::memcpy(out, in, std::min(size, sizeof *out));
  out->struct_size = sizeof *out;
  return Refusal();
}

// Checks the config and fills the profile and the node; the neighbours are
// copied, sorted and capped here.
Refusal Validate(const nodefl_config& c, host::node::RoleProfile* profile, host::node::NodeData* node) {
  const auto bad = [](std::string text) { return Refuse(NODEFL_ERR_ARGUMENT, std::move(text)); };
  profile->job = c.job != nullptr ? c.job : "neighbour-echo";
  if (!KnownJob(profile->job)) {
    return bad("config.job: unknown job '" + profile->job +
               "' (expected neighbour-echo, fedwalk-hct, fedwalk, fedwalk-histograms, secure-compare, lumos-trees "
               "or secure-aggregate)");
  }
  profile->fedwalk_mode = c.fedwalk_mode != nullptr ? c.fedwalk_mode : "strict";
  if (profile->fedwalk_mode != "strict" && profile->fedwalk_mode != "paper") {
    return bad("config.fedwalk_mode: '" + profile->fedwalk_mode + "' (expected strict or paper)");
  }
  const std::string& job = profile->job;
  const bool fedwalk = job == "fedwalk" || job == "fedwalk-hct" || job == "fedwalk-histograms";
  if (c.neighbour_count == 0) return bad("config.neighbours: a device needs at least one neighbour (none given)");
  if (c.neighbours == nullptr) {
    return bad("config.neighbours is NULL but neighbour_count is " + std::to_string(c.neighbour_count));
  }
  std::vector<uint32_t> neighbours(c.neighbours, c.neighbours + c.neighbour_count);
  std::sort(neighbours.begin(), neighbours.end());
  if (const auto twice = std::adjacent_find(neighbours.begin(), neighbours.end()); twice != neighbours.end()) {
    return bad("config.neighbours: neighbour " + std::to_string(*twice) + " is listed twice");
  }
  if (std::binary_search(neighbours.begin(), neighbours.end(), c.device_id)) {
    return bad("config.neighbours: lists the device's own id " + std::to_string(c.device_id));
  }
  if (c.degree != 0 && c.degree < neighbours.size()) {
    return bad("config.degree " + std::to_string(c.degree) + " is below the " + std::to_string(neighbours.size()) +
               " neighbours given");
  }
  if (fedwalk && (c.vertices < 2 || c.vertices > 65535)) {
    return bad("config.vertices: the fedwalk jobs need the most vertices a job may have (2..65535), got " +
               std::to_string(c.vertices));
  }
  if (c.max_neighbours != 0 && !fedwalk) return bad("config.max_neighbours applies to the fedwalk jobs only");
  if (c.feature_count != 0 && c.features == nullptr) {
    return bad("config.features is NULL but feature_count is " + std::to_string(c.feature_count));
  }
  if (c.lumos_train != 0 && (job != "lumos-trees" || c.feature_count == 0)) {
    return bad("config.lumos_train needs job lumos-trees and features");
  }
  if (c.label < -1) return bad("config.label must be -1 (none) or a class");
  if (c.lumos_train != 0 && (c.train_hidden == 0 || c.train_hidden > 1024 || c.train_out == 0 ||
                             c.train_out > 1024 || c.train_classes > 65535)) {
    return bad("config.train_hidden and train_out must be 1..1024, train_classes at most 65535");
  }
  if (c.unlimited_budget == 0 && !(c.budget_job_epsilon > 0 && std::isfinite(c.budget_job_epsilon) &&
                                   c.budget_lifetime_epsilon > 0 && std::isfinite(c.budget_lifetime_epsilon))) {
    return bad("config.budget_job_epsilon and budget_lifetime_epsilon must be positive and finite");
  }
  if (!FiniteNonNegative(c.lifetime_epsilon_spent) || !FiniteNonNegative(c.lifetime_delta_spent)) {
    return bad("config.lifetime_epsilon_spent and lifetime_delta_spent must be finite and not negative");
  }
  if (c.server_name == nullptr || c.server_name[0] == '\0') {
    return bad("config.server_name is required (the name in the server's certificate)");
  }
  if (c.ca == nullptr || c.ca_size == 0) return bad("config.ca is required (the deployment CA certificate)");
  if (c.cert == nullptr || c.cert_size == 0) return bad("config.cert is required (this device's certificate)");
  if (c.key == nullptr || c.key_size == 0) return bad("config.key is required (this device's private key)");
  if (c.log_level < NODEFL_LOG_DEBUG || c.log_level > NODEFL_LOG_ERROR) return bad("config.log_level must be 0..3");

  profile->vertex_count = c.vertices;
  profile->max_neighbours = c.max_neighbours;
  // Paper-mode walks need the kept tree and bin plan (the 2-hop predictor).
  profile->keep_tree_and_bin_plan = job == "fedwalk" && profile->fedwalk_mode == "paper";
  profile->lumos_train = c.lumos_train != 0;
  profile->train_features = static_cast<uint32_t>(c.feature_count);
  profile->train_classes = c.train_classes;
  profile->train_hidden = c.train_hidden;
  profile->train_out = c.train_out;
  if (c.unlimited_budget != 0) {
    profile->budget = PrivacyBudget::Unlimited();
  } else {
    profile->budget.job_epsilon = c.budget_job_epsilon;
    profile->budget.lifetime_epsilon = c.budget_lifetime_epsilon;
  }
  profile->noise_seed = c.noise_seed;
  static constexpr LogLevel kLevels[] = {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError};
  profile->device_log_level = kLevels[c.log_level];

  node->id = c.device_id;
  node->degree = std::max<uint32_t>(c.degree, static_cast<uint32_t>(neighbours.size()));
  host::node::CapNeighbours(&neighbours, c.max_neighbours);
  node->neighbours = std::move(neighbours);
  if (c.feature_count != 0) node->features.assign(c.features, c.features + c.feature_count);
  node->label = c.label;
  node->lifetime_epsilon_spent = c.lifetime_epsilon_spent;
  node->lifetime_delta_spent = c.lifetime_delta_spent;
  return Refusal();
}

// Loads the credentials, builds the roles, the endpoint and the pump.
// The session's log lines to the app's callback (nodefl_config.log_callback).
void ForwardLog(void* context, LogLevel level, const char* line) {
  const auto* d = static_cast<const nodefl_device*>(context);
  d->log_callback(d->log_context, static_cast<int32_t>(level), line);
}

Refusal Build(nodefl_device* d, const nodefl_config& c, host::node::NodeData node) {
  d->roles = std::make_unique<host::node::DeviceRoles>(d->profile, std::move(node));
  if (c.log_callback != nullptr) {
    d->log_callback = c.log_callback;
    d->log_context = c.log_context;
    d->roles->set_log_writer(&ForwardLog, d);
  }
  tls::TlsCredentials& credentials = d->roles->credentials();
  if (const Status st = credentials.LoadCaChain(ConstByteSpan(c.ca, c.ca_size)); !st.ok()) {
    return Refuse(NODEFL_ERR_CREDENTIALS,
                  std::string("config.ca: not a usable P-256 CA certificate in PEM or DER (") + st.str() + ")");
  }
  if (const Status st = credentials.LoadOwnIdentity(ConstByteSpan(c.cert, c.cert_size), ConstByteSpan(c.key, c.key_size));
      !st.ok()) {
    return Refuse(NODEFL_ERR_CREDENTIALS,
                  std::string("config.cert, config.key: not a usable P-256 certificate and matching key (") +
                      st.str() + ")");
  }
  if (const Status st = d->roles->Init(); !st.ok()) {
    return Refuse(st.code() == StatusCode::kResourceExhausted ? NODEFL_ERR_NO_MEMORY : NODEFL_ERR_ARGUMENT,
                  std::string("cannot set the device's roles up for job ") + d->profile.job + " (" + st.str() + ")");
  }
  if (const Status st = d->endpoint.Init(d->roles->tls_config(), ByteSpan(d->tls_in), ByteSpan(d->tls_out),
                                         c.server_name);
      !st.ok()) {
    return Refuse(NODEFL_ERR_ARGUMENT, std::string("config.server_name: the TLS endpoint refused it (") + st.str() + ")");
  }
  client::PumpOptions options;
  options.handshake_timeout_us = uint64_t{c.handshake_timeout_ms} * 1000u;
  d->pump = std::make_unique<client::DevicePump>(d->endpoint, d->roles->session(), ByteSpan(d->plaintext), options);
  return Refusal();
}

void Report(const Refusal& refusal, char* error, size_t error_size) {
  if (error == nullptr || error_size == 0) return;
  std::snprintf(error, error_size, "%s", refusal.text.c_str());
}

}  // namespace
}  // namespace nodefl::capi

using nodefl::capi::Guard;

extern "C" nodefl_status nodefl_config_init(nodefl_config* config, size_t config_size) {
  if (config == nullptr) return NODEFL_ERR_ARGUMENT;
  if (config_size < nodefl::capi::kConfigSizeV1) return NODEFL_ERR_VERSION;
  // A caller compiled with a newer, larger header: its extra fields are
  // zero, which a newer library reads as their defaults. One compiled with
  // an older, smaller header gets only the fields it has.
  nodefl_config defaults;
  nodefl::capi::Defaults(&defaults);
  std::memset(config, 0, config_size);
  std::memcpy(config, &defaults, std::min(config_size, sizeof defaults));
  config->struct_size = static_cast<uint32_t>(config_size);
  return NODEFL_OK;
}

extern "C" nodefl_status nodefl_device_create(const nodefl_config* config, nodefl_device** out, char* error,
                                              size_t error_size) {
  namespace capi = nodefl::capi;
  if (error != nullptr && error_size > 0) error[0] = '\0';
  if (out != nullptr) *out = nullptr;
  capi::Refusal refusal;
  nodefl_device* device = nullptr;
  const nodefl_status status = Guard(nullptr, [&]() -> nodefl_status {
    if (config == nullptr || out == nullptr) {
      refusal = capi::Refuse(NODEFL_ERR_ARGUMENT, "nodefl_device_create: config and out must not be NULL");
      return refusal.status;
    }
    nodefl_config c;
    refusal = capi::ReadConfig(config, &c);
    if (!refusal.ok()) return refusal.status;
    device = new nodefl_device();
    nodefl::host::node::NodeData node;
    refusal = capi::Validate(c, &device->profile, &node);
    if (refusal.ok()) refusal = capi::Build(device, c, std::move(node));
    return refusal.status;
  });
  if (status == NODEFL_OK) {
    *out = device;
    return NODEFL_OK;
  }
  if (refusal.ok()) refusal = capi::Refuse(status, nodefl_status_text(status));  // thrown, not refused
  capi::Report(refusal, error, error_size);
  nodefl_device_destroy(device);
  return status;
}

extern "C" void nodefl_device_destroy(nodefl_device* device) {
  if (device == nullptr) return;
  // The members go in reverse order of declaration (the pump, the endpoint,
  // whose MbedTLS contexts zeroise themselves, then the roles); the
  // buffers the C API owns are overwritten first.
  device->pump.reset();
  nodefl::capi::Zeroise(device->tls_in, sizeof device->tls_in);
  nodefl::capi::Zeroise(device->tls_out, sizeof device->tls_out);
  nodefl::capi::Zeroise(device->plaintext, sizeof device->plaintext);
  nodefl::capi::Zeroise(device->last_error, sizeof device->last_error);
  delete device;
}
