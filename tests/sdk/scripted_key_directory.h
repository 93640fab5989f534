// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// What nodefl-server's key directory and relay do, for the scripted
// (in-process) servers of the tests: remember each device's announced job
// key, answer peer-key requests with peer_certificate envelopes once the
// requested peer has announced its key (the server waits rather than answer
// without one), and turn a relay_send into a relay_deliver numbered per
// destination (what a resumed session acknowledges). The harnesses differ
// only in the Rules below and in where the envelopes go (the sinks).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "nodefl/core/span.h"
#include "nodefl/protocol/envelope.pb.h"
#include "session_frames.h"

namespace nodefl::testing {

class ScriptedKeyDirectory {
 public:
  // How one harness's server differs from another's; an empty rule is the
  // common case.
  struct Rules {
    // Whether `id` names a device at all. An unknown id is answered at once
    // with found = false, as the server does; empty: every id is known, so
    // a request for a device that never announces a key waits for ever.
    std::function<bool(uint32_t id)> known;
    // The certificate an answer carries for `id`; empty: none (devices that
    // take their pair keys from elsewhere do not check one).
    std::function<ConstByteSpan(uint32_t id)> certificate_der;
    // Whether `from`'s answerable requests wait for now (keys that come
    // late); empty: never.
    std::function<bool(uint32_t from)> held;
    // Whether `from` went away: its requests are dropped, as the server
    // drops a closed connection's; empty: never.
    std::function<bool(uint32_t from)> gone;
    // The round the answers carry; nullopt: the request's own.
    std::optional<uint32_t> round = 1;
  };
  Rules rules;

  ScriptedKeyDirectory() = default;
  // The rules usually capture the harness's `this`: keep the harness in place.
  ScriptedKeyDirectory(const ScriptedKeyDirectory&) = delete;
  ScriptedKeyDirectory& operator=(const ScriptedKeyDirectory&) = delete;

  void OnJobKey(uint32_t from, const nodefl_wire_JobKey& k) {
    job_keys_[from].assign(k.public_key.bytes, k.public_key.bytes + k.public_key.size);
  }
  void OnKeyRequest(uint32_t from, const nodefl_wire_PeerKeyRequest& r, uint32_t round) {
    for (pb_size_t i = 0; i < r.device_ids_count; ++i) requests_.push_back({from, r.device_ids[i], round});
  }

  // Hands every request that can be answered now to `sink(to, envelope)`,
  // in the order they came, and keeps the others for the next call (after
  // the next OnJobKey, or when a `held` rule changed).
  template <typename Sink>
  void Answer(uint64_t job, Sink&& sink) {
    std::vector<Request> waiting;
    for (const Request& r : requests_) {
      if (rules.gone && rules.gone(r.from)) continue;
      const bool known = !rules.known || rules.known(r.id);
      if ((rules.held && rules.held(r.from)) || (known && job_keys_.count(r.id) == 0)) {
        waiting.push_back(r);
        continue;
      }
      nodefl_wire_Envelope c =
          AddressedEnvelope(nodefl_wire_Envelope_peer_certificate_tag, job, rules.round.value_or(r.round));
      nodefl_wire_PeerCertificate& p = c.body.peer_certificate;
      p.device_id = r.id;
      p.found = known;
      if (known) {
        if (rules.certificate_der) CopyBytes(rules.certificate_der(r.id), p.certificate_der);
        CopyBytes(job_keys_.at(r.id), p.job_key);
      }
      sink(r.from, c);
    }
    requests_.swap(waiting);
  }

  // `r` relayed from `from`, as its destination receives it.
  nodefl_wire_Envelope Deliver(uint32_t from, const nodefl_wire_RelaySend& r, uint64_t job, uint32_t round) {
    return Deliver(from, r.dst, ConstByteSpan(r.sealed.bytes, r.sealed.size), job, round);
  }
  // The same for sealed bytes a harness held back (to deliver out of order).
  nodefl_wire_Envelope Deliver(uint32_t from, uint32_t dst, ConstByteSpan sealed, uint64_t job, uint32_t round) {
    nodefl_wire_Envelope d = AddressedEnvelope(nodefl_wire_Envelope_relay_deliver_tag, job, round);
    d.body.relay_deliver.src = from;
    d.body.relay_deliver.relay_id = ++relay_ids_[dst];
    CopyBytes(sealed, d.body.relay_deliver.sealed);
    return d;
  }

 private:
  struct Request {
    uint32_t from, id, round;
  };
  template <typename PbBytes>
  static void CopyBytes(ConstByteSpan from, PbBytes& to) {
    if (!from.empty()) std::memcpy(to.bytes, from.data(), from.size());  // memcpy of nullptr is undefined
    to.size = static_cast<pb_size_t>(from.size());
  }

  std::map<uint32_t, std::vector<uint8_t>> job_keys_;
  std::vector<Request> requests_;
  std::map<uint32_t, uint64_t> relay_ids_;  // by destination
};

}  // namespace nodefl::testing
