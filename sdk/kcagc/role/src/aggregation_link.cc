// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/aggregation_link.h"

#include <utility>

#include "nodefl/protocol/secagg/aggregation_format.h"

namespace nodefl::kcagc {

AggregationLink::AggregationLink(uint32_t own_id, const tls::TlsCredentials& credentials, Drbg& random)
    : own_id_(own_id), credentials_(credentials), random_(random) {}

Status AggregationLink::StartJob(uint64_t job_id, const seal::JobKeyPair& job_key, uint32_t peers,
                                 uint32_t max_length) {
  if (peers == 0 || max_length == 0 || peers > secagg::kMaxAggPeers || max_length > secagg::kMaxAggLength) {
    return Status::InvalidArgument();
  }
  EndJob();
  peers_.assign(peers, secagg::AggregationPeer{});
  shares_.assign(2 * size_t{peers}, secagg::Share{});
  points_.assign(peers, 0);
  vector_.assign(max_length, 0);
  key_records_.assign(peers, roles::KeyedPeer{});
  held_.assign(peers, secagg::HeldMessage{});
  secagg::AggregationLinkMemory memory;
  memory.aggregation = secagg::AggregationMemory{Span<secagg::AggregationPeer>(peers_), Span<secagg::Share>(shares_),
                                                 Span<uint64_t>(points_), Span<uint32_t>(vector_)};
  memory.keys = Span<roles::KeyedPeer>(key_records_);
  memory.held = Span<secagg::HeldMessage>(held_);
  link_ = std::make_unique<secagg::AggregationLink>(own_id_, memory, credentials_, random_);
  if (source_.derive != nullptr) link_->SetPairKeySource(source_);
  link_->SetInputFunction(&Input, this);
  link_->StartJob(job_id, job_key);
  job_id_ = job_id;
  offered_aggregation_ = 0;
  offered_.clear();
  return Status::Ok();
}

void AggregationLink::EndJob() {
  if (link_ != nullptr) link_->EndJob();
  link_.reset();
  offered_.clear();
  offered_aggregation_ = 0;
}

void AggregationLink::OnCertificate(const nodefl_wire_PeerCertificate& certificate) {
  if (link_ != nullptr) (void)link_->OnCertificate(certificate);
}

void AggregationLink::OnDelivery(const nodefl_wire_RelayDeliver& delivery) {
  if (link_ != nullptr) link_->OnDelivery(delivery);
}

void AggregationLink::OnRecord(uint32_t kind, ConstByteSpan data) {
  if (link_ != nullptr) link_->OnRecord(kind, data);
}

void AggregationLink::Offer(uint32_t aggregation, std::vector<uint32_t> codes) {
  offered_aggregation_ = aggregation;
  offered_ = std::move(codes);
}

Status AggregationLink::Input(void* context, const secagg::AggStart& start, Span<uint32_t> out) {
  auto* self = static_cast<AggregationLink*>(context);
  // Not offered yet (the instruction may come after the aggregation's
  // start): the link asks again.
  if (self->offered_aggregation_ != start.aggregation) return Status::Unavailable();
  if (self->offered_.size() != start.length) return Status::InvalidArgument();
  for (size_t i = 0; i < self->offered_.size(); ++i) out[i] = self->offered_[i];
  return Status::Ok();
}

Status AggregationLink::Drain(device::DeviceSession& session) {
  return link_ != nullptr ? link_->Pump(session, 1) : Status::Ok();
}

void AggregationLink::OnSessionRestart() {
  if (link_ != nullptr) link_->OnRestart();
}

}  // namespace nodefl::kcagc
