// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The participant's way into secure aggregation: secagg::AggregationLink
// (sdk/secagg aggregation_link.h: the client, keys on demand, sealing,
// held messages) with its memory sized per job on the heap (a participant
// is an organisation's machine, not a device) and the input offered as a
// vector per aggregation rather than pulled through a callback.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/job_keys.h"
#include "nodefl/seal/pair_key_source.h"
#include "nodefl/secagg/aggregation_link.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::kcagc {

class AggregationLink {
 public:
  using Stats = secagg::AggregationLink::Stats;

  // `random` draws everything the client draws (round keys, self seeds,
  // share polynomials); `credentials` check the peers' certificates.
  AggregationLink(uint32_t own_id, const tls::TlsCredentials& credentials, Drbg& random);

  // See seal/pair_key_source.h (hosts of many emulated participants only).
  void SetPairKeySource(const seal::PairKeySource& source) { source_ = source; }

  // A new job `job_id` whose job key is `job_key` (kept by the caller for
  // the whole job): room for `peers` mask peers and vectors of up to
  // `max_length` words. kInvalidArgument for 0 peers or length.
  [[nodiscard]] Status StartJob(uint64_t job_id, const seal::JobKeyPair& job_key, uint32_t peers, uint32_t max_length);
  // The job is over: keys wiped, the client forgotten.
  void EndJob();

  // Envelopes of the job: a key answer, a relayed message, an aggregation
  // record (IsAggregationKind). Never fatal: refusals are counted.
  void OnCertificate(const nodefl_wire_PeerCertificate& certificate);
  void OnDelivery(const nodefl_wire_RelayDeliver& delivery);
  void OnRecord(uint32_t kind, ConstByteSpan data);

  // The codes this participant adds to aggregation `aggregation` (handed to
  // the client when that aggregation wants them; a later offer replaces an
  // earlier one not yet handed over).
  void Offer(uint32_t aggregation, std::vector<uint32_t> codes);
  // Key requests, the input when due, the client's records and sealed
  // peer messages, while the session has room.
  [[nodiscard]] Status Drain(device::DeviceSession& session);
  void OnSessionRestart();

  bool active() const { return link_ != nullptr; }
  const secagg::AggregationClient* client() const { return link_ != nullptr ? &link_->client() : nullptr; }
  const Stats& stats() const { return link_ != nullptr ? link_->stats() : no_stats_; }

 private:
  static Status Input(void* context, const secagg::AggStart& start, Span<uint32_t> out);

  uint32_t own_id_;
  const tls::TlsCredentials& credentials_;
  Drbg& random_;
  seal::PairKeySource source_;
  uint64_t job_id_ = 0;
  // The link's memory (AggregationLinkMemory points into these).
  std::vector<secagg::AggregationPeer> peers_;
  std::vector<secagg::Share> shares_;
  std::vector<uint64_t> points_;
  std::vector<uint32_t> vector_;
  std::vector<roles::KeyedPeer> key_records_;
  std::vector<secagg::HeldMessage> held_;
  std::unique_ptr<secagg::AggregationLink> link_;
  // The offered input.
  uint32_t offered_aggregation_ = 0;
  std::vector<uint32_t> offered_;
  Stats no_stats_;
};

}  // namespace nodefl::kcagc
