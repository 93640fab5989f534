// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_train_job.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/limits.h"
#include "nodefl/secagg/fixed_point.h"
#include "nodefl/server/lumos/training/central.h"

namespace nodefl::server::jobs {

namespace tf = nodefl::lumos;
namespace sl = nodefl::server::lumos;
namespace sa = nodefl::secagg;

namespace {

constexpr uint32_t kRoundSetup = 1;

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

double Ratio(double a, uint64_t b) { return b ? a / static_cast<double>(b) : 0; }

// JobData bytes of the parameters for one device: a 4-byte first index per
// record plus the floats.
uint64_t ParamsBytes(size_t total) {
  const uint64_t records = (total + tf::kTrainFloatsPerRecord - 1) / tf::kTrainFloatsPerRecord;
  return 4 * records + 4 * uint64_t{total};
}

// Secure sum: the largest power of two 2^k with n codes of |x| <= clip
// summing below 2^31 (secagg/fixed_point.h, MaxSummands), k within the
// contract's signed byte; false when none is.
bool ScaleLog2For(float clip, size_t n, int8_t* out) {
  for (int k = 30; k >= -120; --k) {
    sa::FixedPoint code;
    code.clip = clip;
    code.scale = static_cast<float>(std::ldexp(1.0, k));
    if (sa::MaxSummands(code) >= n) {
      *out = static_cast<int8_t>(k);
      return true;
    }
  }
  return false;
}

sa::FixedPoint CodeOf(float clip, int8_t scale_log2) {
  sa::FixedPoint code;
  code.clip = clip;
  code.scale = static_cast<float>(std::ldexp(1.0, scale_log2));
  return code;
}

// A word of integer counts, read as the signed sum it is.
int64_t Signed(uint32_t word) { return word >= 0x80000000u ? int64_t{word} - (int64_t{1} << 32) : int64_t{word}; }

// The most devices whose counts (at most kTrainSecureCountClip each) sum
// below 2^31.
constexpr size_t kMaxSecureDevices = 0x7fffffffu / tf::kTrainSecureCountClip;

// The first epoch, or a validation score above the best so far. Link mode's
// AUC is NaN while a side has no score: it never beats a defined one.
bool Better(double candidate, double best, bool first) {
  return first || (!std::isnan(candidate) && (std::isnan(best) || candidate > best));
}

}  // namespace

LumosTrainJob::LumosTrainJob(LumosTrainOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), participants_(std::move(participants)), adam_(0, options_.adam) {
  // Ascending ids: participant i takes SplitNodes' entry i, so the split is
  // reproducible from the seed and the id set alone.
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id];
  summary_.participants = static_cast<uint32_t>(participants_.size());
}

std::vector<uint8_t> LumosTrainJob::Parameters(tf::TrainPhase phase, uint32_t epoch, bool train) const {
  const gnn::ModelShape& s = options_.shape;
  tf::TrainParameters p;
  p.phase = phase;
  p.paper = options_.paper;
  p.ego_star = options_.ego_star;
  p.layer = static_cast<uint8_t>(s.layer);
  p.features = s.features;
  p.hidden = static_cast<uint16_t>(s.hidden);
  p.out = static_cast<uint16_t>(s.out);
  p.heads = static_cast<uint8_t>(s.heads);
  p.classes = static_cast<uint16_t>(s.classes);
  p.dropout = s.dropout;
  p.epsilon = options_.epsilon;
  p.label_epsilon = options_.label_epsilon;
  p.parameters = static_cast<uint32_t>(layout_.total);
  std::copy(std::begin(salt_), std::end(salt_), std::begin(p.salt));
  p.epoch = epoch;
  p.train = train;
  p.task = options_.task;
  p.projection = options_.projection;
  p.projection_seed = options_.projection_seed;
  if (link()) {
    p.negatives = options_.negatives;
    p.eval_negatives = options_.eval_negatives;
    p.edge_seed = options_.edge_seed;
  }
  if (options_.secure_sum) {
    p.secure_sum = true;
    p.secure_clip = options_.secure_clip;
    p.secure_scale_log2 = secure_scale_log2_;
    p.secure_loss_scale_log2 = secure_loss_scale_log2_;
  }
  std::vector<uint8_t> out(tf::kTrainParametersBytes);
  if (!tf::EncodeTrainParameters(p, ByteSpan(out)).ok()) out.clear();
  return out;
}

void LumosTrainJob::Fail(std::string error, uint64_t now_us) {
  summary_.error = std::move(error);
  Finish(now_us);
}

std::vector<RoundStart> LumosTrainJob::Begin(uint64_t now_us) {
  phase_ = Phase::kSetup;
  round_started_us_ = now_us;
  if (participants_.empty()) {
    Fail("no participants", now_us);
    return {};
  }
  const gnn::ModelShape& s = options_.shape;
  // The contract's field widths (train_format.h): a shape beyond them could
  // not be told to the devices.
  if (s.hidden > 0xffff || s.out > 0xffff || s.heads > 0xff || s.classes > 0xffff || (s.classes == 0 && !link())) {
    Fail("model shape does not fit the contract (hidden, out, classes: 16 bits, heads: 8 bits, classes >= 1)",
         now_us);
    return {};
  }
  if (link() && s.classes != 0) {
    Fail("the link task has no classifier: classes must be 0", now_us);
    return {};
  }
  if (options_.epochs == 0) {
    Fail("epochs must be at least 1", now_us);
    return {};
  }
  gnn::ModelShape model = s;  // what the first layer sees: the projection, if any
  if (options_.projection != 0) model.features = options_.projection;
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(model);
  if (!layout.ok()) {
    Fail(std::string("model shape rejected by LayoutOf: ") + StatusCodeName(layout.status().code()), now_us);
    return {};
  }
  layout_ = *layout;
  std::random_device rd;
  if (options_.secure_sum) {
    if (participants_.size() > kMaxSecureDevices) {
      Fail("secure sum: more devices than the counts' code allows (" + std::to_string(kMaxSecureDevices) + ")", now_us);
      return {};
    }
    if (tf::TrainSecureLength(static_cast<uint32_t>(layout_.total)) > sa::kMaxAggLength ||
        !PickSecureScales(participants_.size())) {
      Fail("secure sum: the model is longer than an aggregation, or lumos_secure_clip has no code", now_us);
      return {};
    }
    // Rounds never repeat across jobs: a fresh salt, mixed with the id.
    service_ = std::make_unique<secagg::AggregationService>((uint64_t{rd()} << 32 | rd()) ^ options_.job_id);
  }
  uint64_t seed = options_.seed;
  if (seed == 0) seed = (uint64_t{rd()} << 32) ^ rd();
  params_ = sl::InitialParameters(layout_, seed);
  sum_.assign(layout_.total, 0.0f);
  adam_ = sl::Adam(layout_.total, options_.adam);
  // The salt keeps one job's device-side randomness (dropout masks, the
  // feature encoding) apart from another's with the same keys.
  for (uint8_t& b : salt_) b = static_cast<uint8_t>(rd());
  std::vector<uint8_t> parameters = Parameters(tf::TrainPhase::kSetup, 0, true);
  if (parameters.empty()) {
    Fail("training parameters do not encode (epsilon, dropout or a dimension out of range)", now_us);
    return {};
  }
  summary_.bytes_down_per_device_epoch = ParamsBytes(layout_.total);

  if (link()) {
    SendPartners();
  } else {
    const std::vector<sl::Split> split =
        sl::SplitNodes(static_cast<uint32_t>(participants_.size()), options_.split_seed);
    for (size_t i = 0; i < participants_.size(); ++i) {
      Device& d = devices_[participants_[i]];
      d.split = split[i];
      d.asked = true;
      data_.push_back(DeviceData{participants_[i], kRoundSetup, tf::kTrainAssignment,
                                 {static_cast<uint8_t>(split[i])}});
    }
  }
  waiting_ = static_cast<uint32_t>(participants_.size());
  RoundStart start;
  start.round = kRoundSetup;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = std::move(parameters);
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

void LumosTrainJob::SendPartners() {
  const std::vector<std::vector<sl::Partner>> partners =
      sl::LinkPartners(participants_, options_.negatives, options_.eval_negatives, options_.split_seed);
  for (size_t i = 0; i < participants_.size(); ++i) {
    const uint32_t id = participants_[i];
    Device& d = devices_[id];
    d.split = sl::Split::kTrain;  // no node split in this task
    d.asked = true;
    const std::vector<sl::Partner>& mine = partners[i];
    for (const sl::Partner& p : mine) {
      // Each pair once (at its lower id).
      if (p.id > id) ++summary_.partner_pairs[p.use == sl::PartnerUse::kTraining ? 0 : 1];
    }
    for (std::vector<uint8_t>& r : sl::PartnerRecords(mine)) {
      data_.push_back(DeviceData{id, kRoundSetup, tf::kTrainPartners, std::move(r)});
    }
    // After the partners on the same stream: the device starts on it.
    data_.push_back(DeviceData{id, kRoundSetup, tf::kTrainAssignment, {0}});
  }
}

void LumosTrainJob::MarkDone(Device& d) {
  if (d.done || d.inactive) return;
  d.done = true;
  --waiting_;
}

void LumosTrainJob::Spoil(Device& d) {
  ++summary_.protocol_errors;
  if (!d.bad) ++current_.discarded;
  d.bad = true;
  d.chunks.clear();
  d.scores.clear();
}

std::vector<RoundStart> LumosTrainJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                                uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  const bool ok = report.code == static_cast<uint32_t>(StatusCode::kOk);
  if (phase_ == Phase::kSetup && round == kRoundSetup && d.asked && !d.done && !d.inactive) {
    d.responded = true;
    if (ok) {
      d.ready = true;
      ++summary_.ready;
    } else {
      summary_.refused.push_back(device);
    }
    MarkDone(d);
  } else if (SecureEpoch() && round == EpochRound(epoch_) && d.asked && !d.done && !d.inactive) {
    // Secure sum: the device's masked vector is out (OK) or its part
    // ended without one. A failure leaves the aggregation now rather than
    // at its step's deadline; the aggregation decides who counts.
    d.done = true;
    if (!ok && aggregation_ != 0) service_->MarkUnreachable(device, now_us);
  } else if (phase_ == Phase::kEpoch && round == EpochRound(epoch_) && d.asked && !d.done && !d.inactive) {
    // A report before the metrics: the device failed this epoch (or broke
    // the contract's order); either way nothing of it counts.
    if (ok) ++summary_.protocol_errors;
    d.bad = true;
    d.chunks.clear();
    d.scores.clear();
    MarkDone(d);
  } else if (phase_ == Phase::kReport && round == ReportRound() && d.asked && !d.done && !d.inactive) {
    MarkDone(d);
  } else if ((phase_ == Phase::kEpoch && round > kRoundSetup && round <= EpochRound(epoch_)) ||
             (phase_ == Phase::kReport && round > kRoundSetup && round < ReportRound())) {
    // The report that follows an epoch's metrics (often after the epoch
    // ended on those metrics): expected, nothing to do.
  } else {
    // Late or repeated.
    ++summary_.ignored;
  }
  return Poll(now_us);
}

std::vector<RoundStart> LumosTrainJob::OnUpload(uint32_t device, uint32_t round, uint32_t kind,
                                                std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  if (sa::IsAggregationKind(kind)) return OnAggregationRecord(device, kind, bytes, now_us);
  switch (kind) {
    case tf::kTrainGradient:
      return OnGradient(device, round, bytes);
    case tf::kTrainMetrics:
      return OnMetrics(device, round, bytes, now_us);
    case tf::kTrainLinkScores:
      if (!link()) break;
      return OnLinkScores(device, round, bytes);
    case tf::kTrainSummary: {
      Result<tf::TrainSummary> s = tf::DecodeTrainSummary(ConstByteSpan(bytes.data(), bytes.size()));
      if (!s.ok()) {
        ++summary_.protocol_errors;
        return {};
      }
      if (phase_ != Phase::kReport || round != ReportRound() || !d.asked || d.has_summary) {
        ++summary_.ignored;
        return {};
      }
      d.summary = *s;
      d.has_summary = true;
      return {};
    }
    default:
      break;
  }
  ++summary_.protocol_errors;
  return {};
}

std::vector<RoundStart> LumosTrainJob::OnGradient(uint32_t device, uint32_t round, const std::vector<uint8_t>& bytes) {
  Device& d = devices_.at(device);
  if (SecureEpoch()) {
    ++summary_.protocol_errors;  // secure sum: a gradient goes through the aggregation only
    return {};
  }
  if (phase_ != Phase::kEpoch || round != EpochRound(epoch_) || !d.asked || d.done || d.inactive) {
    ++summary_.ignored;
    return {};
  }
  const size_t count = bytes.size() >= 4 ? (bytes.size() - 4) / 4 : 0;
  bool valid = bytes.size() >= 8 && bytes.size() % 4 == 0 && count <= tf::kTrainFloatsPerRecord;
  const uint64_t first = valid ? LoadU32Le(bytes.data()) : 0;
  valid = valid && first + count <= layout_.total;
  Chunk chunk;
  if (valid) {
    chunk.first = static_cast<uint32_t>(first);
    chunk.values.resize(count);
    for (size_t i = 0; i < count && valid; ++i) {
      chunk.values[i] = LoadF32Le(bytes.data() + 4 + 4 * i);
      valid = std::isfinite(chunk.values[i]);
    }
  }
  if (!valid) {
    // One bad record spoils the whole contribution: a partial gradient
    // would bias the average towards the records that did arrive.
    Spoil(d);
    return {};
  }
  if (d.bytes_up == 0) ++uploaders_;
  d.bytes_up += bytes.size();
  bytes_up_total_ += bytes.size();
  // The evaluation epoch updates nothing: its records are checked and
  // dropped.
  if (!d.bad && current_.train) {
    for (float v : chunk.values) current_.max_abs_gradient = std::max(current_.max_abs_gradient, double{std::fabs(v)});
    d.chunks.push_back(std::move(chunk));
  }
  return {};
}

std::vector<RoundStart> LumosTrainJob::OnLinkScores(uint32_t device, uint32_t round,
                                                    const std::vector<uint8_t>& bytes) {
  Device& d = devices_.at(device);
  if (phase_ != Phase::kEpoch || round != EpochRound(epoch_) || !d.asked || d.done || d.inactive) {
    ++summary_.ignored;
    return {};
  }
  // epoch (4) | entries of kind (1) | bin (1); any bin is a valid one.
  const size_t entries = bytes.size() >= 4 ? (bytes.size() - 4) / 2 : 0;
  bool valid = bytes.size() >= 4 && bytes.size() % 2 == 0 && entries <= tf::kTrainScoresPerRecord &&
               LoadU32Le(bytes.data()) == epoch_;
  for (size_t k = 0; k < entries && valid; ++k) {
    const uint8_t kind = bytes[4 + 2 * k];
    valid = kind >= tf::kScoreValidationEdge && kind <= tf::kScoreNegative;
  }
  if (!valid) {
    // Like a bad gradient record: scores of a device whose contribution is
    // partly wrong would skew the AUC.
    Spoil(d);
    return {};
  }
  if (d.bytes_up == 0) ++uploaders_;
  d.bytes_up += bytes.size();
  bytes_up_total_ += bytes.size();
  if (!d.bad) d.scores.insert(d.scores.end(), bytes.begin() + 4, bytes.end());
  return {};
}

bool LumosTrainJob::Merge(Device& d) {
  std::sort(d.chunks.begin(), d.chunks.end(), [](const Chunk& a, const Chunk& b) { return a.first < b.first; });
  size_t end = 0;
  for (const Chunk& c : d.chunks) {
    if (c.first < end) return false;
    end = c.first + c.values.size();
  }
  for (const Chunk& c : d.chunks) {
    for (size_t i = 0; i < c.values.size(); ++i) sum_[c.first + i] += c.values[i];
  }
  return true;
}

std::vector<RoundStart> LumosTrainJob::OnMetrics(uint32_t device, uint32_t round, const std::vector<uint8_t>& bytes,
                                                 uint64_t now_us) {
  Device& d = devices_.at(device);
  Result<tf::TrainMetrics> m = tf::DecodeTrainMetrics(ConstByteSpan(bytes.data(), bytes.size()));
  if (!m.ok() || SecureEpoch()) {
    ++summary_.protocol_errors;  // secure sum: metrics go through the aggregation only
    return {};
  }
  if (phase_ != Phase::kEpoch || round != EpochRound(epoch_) || m->epoch != epoch_ || !d.asked || d.done ||
      d.inactive) {
    ++summary_.ignored;
    return {};
  }
  const auto split = static_cast<uint8_t>(d.split);
  // Link mode has no node split and no label: only a loss taken outside a
  // training epoch is wrong there.
  const bool disagrees =
      link() ? m->trained && !current_.train
             : m->split != split ||
                   (m->trained && (!current_.train || !m->labelled || d.split != sl::Split::kTrain));
  if (disagrees) {
    // The device disagrees with its assignment: its numbers would land in
    // the wrong split's accuracy (or in a gradient that is not asked for).
    Spoil(d);
    MarkDone(d);
    return Poll(now_us);
  }
  if (!d.bad && current_.train && !Merge(d)) {
    ++summary_.protocol_errors;
    ++current_.discarded;
    d.bad = true;
  }
  d.chunks.clear();
  d.chunks.shrink_to_fit();
  if (!d.bad && link()) {
    CountLinkMetrics(d, *m);
  } else if (!d.bad) {
    // A device whose contribution was dropped keeps its metrics out too:
    // its loss would count in the divisor with no gradient behind it.
    if (m->trained) {
      ++current_.trained;
      loss_sum_ += m->loss;
    }
    if (m->labelled) {
      ++current_.labelled[split];
      if (m->correct) ++correct_[split];
      if (d.split == sl::Split::kValidation) validation_loss_sum_ += m->loss;
      if (d.split == sl::Split::kTrain) {
        train_loss_sum_ += m->loss;
        ++train_labelled_;
      }
    }
  }
  d.scores.clear();
  MarkDone(d);
  return Poll(now_us);
}

void LumosTrainJob::CountLinkScores(Device& d) {
  for (size_t k = 0; k + 1 < d.scores.size(); k += 2) {
    const uint8_t kind = d.scores[k];
    ++histogram_[kind - 1][d.scores[k + 1]];
    if (kind == tf::kScoreNegative) {
      ++current_.negatives;
    } else {
      ++current_.positives[kind];  // kScoreValidationEdge 1, kScoreTestEdge 2: the split's index
    }
  }
  d.scores.clear();
}

void LumosTrainJob::CountLinkMetrics(Device& d, const tf::TrainMetrics& m) {
  CountLinkScores(d);
  if (m.trained) {
    ++current_.trained;
    current_.terms += m.terms;
  }
  // The loss also when none was trained on (the evaluation epoch), if the
  // device reports one: a sum over `terms` terms either way.
  if (m.terms > 0) {
    loss_sum_ += m.loss;
    loss_terms_ += m.terms;
  }
}

std::vector<RoundStart> LumosTrainJob::StartEpoch(uint64_t now_us) {
  ++epoch_;
  round_started_us_ = now_us;
  gone_.clear();  // the last epoch's, if it ended before they were told
  current_ = LumosTrainEpoch{};
  current_.epoch = epoch_;
  current_.train = epoch_ <= options_.epochs;
  current_.bytes_down = summary_.bytes_down_per_device_epoch;
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  loss_sum_ = validation_loss_sum_ = train_loss_sum_ = 0;
  train_labelled_ = 0;
  std::fill(std::begin(correct_), std::end(correct_), 0u);
  for (sl::ScoreHistogram& h : histogram_) h.fill(0);
  loss_terms_ = 0;
  bytes_up_total_ = 0;
  uploaders_ = 0;

  aggregation_ = 0;

  RoundStart start;
  start.round = EpochRound(epoch_);
  start.deadline_ms = options_.epoch_deadline_ms;
  // Every device that finished setup, stragglers of earlier epochs and
  // unreachable ones included: they catch up with the current weights.
  for (auto& [id, d] : devices_) {
    d.asked = d.ready;
    d.inactive = d.done = d.bad = false;
    d.bytes_up = 0;
    d.chunks.clear();
    d.scores.clear();
    if (d.ready) start.devices.push_back(id);
  }
  current_.devices = static_cast<uint32_t>(start.devices.size());
  waiting_ = current_.devices;
  // Secure sum: codes for the devices asked (fewer than at setup, never
  // more), so their sum cannot wrap.
  if (SecureEpoch()) (void)PickSecureScales(start.devices.size());
  start.parameters = Parameters(tf::TrainPhase::kEpoch, epoch_, current_.train);
  // The parameters once, copied to every device's stream after its round
  // start.
  std::vector<std::vector<uint8_t>> records;
  for (size_t first = 0; first < params_.size(); first += tf::kTrainFloatsPerRecord) {
    const size_t n = std::min(tf::kTrainFloatsPerRecord, params_.size() - first);
    std::vector<uint8_t> bytes(4 + 4 * n);
    StoreU32Le(static_cast<uint32_t>(first), bytes.data());
    for (size_t i = 0; i < n; ++i) StoreF32Le(params_[first + i], bytes.data() + 4 + 4 * i);
    records.push_back(std::move(bytes));
  }
  for (uint32_t id : start.devices) {
    for (const std::vector<uint8_t>& r : records) data_.push_back(DeviceData{id, start.round, tf::kTrainParams, r});
  }
  // After the parameters on each stream (TakeData keeps the order).
  if (SecureEpoch()) StartAggregation(start.devices, now_us);
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

// ---- Secure sum ------------------------------------------------------------------------------

bool LumosTrainJob::PickSecureScales(size_t devices) {
  const size_t n = std::max<size_t>(devices, 1);
  return ScaleLog2For(options_.secure_clip, n, &secure_scale_log2_) &&
         ScaleLog2For(tf::kTrainSecureLossClip, n, &secure_loss_scale_log2_);
}

void LumosTrainJob::StartAggregation(const std::vector<uint32_t>& devices, uint64_t now_us) {
  secagg::AggregationRequest request;
  request.devices = devices;
  request.length = tf::TrainSecureLength(static_cast<uint32_t>(layout_.total));
  request.mode = sa::AggMode::kRobust;
  const double n = static_cast<double>(std::max<size_t>(devices.size(), 2));
  // Bell et al. (CCS'20) need O(log n) peers; the service's default for
  // the sparse graph, as secure_aggregate_kind.cc has it.
  request.peers = options_.secure_peers != 0 ? options_.secure_peers
                                             : 2 * static_cast<uint32_t>(std::ceil(std::log2(n)));
  request.threshold = options_.secure_threshold;
  // The upload step waits for the whole epoch's computation.
  request.step_timeout_us = uint64_t{options_.epoch_deadline_ms} * 1000;
  request.graph_seed = options_.split_seed * 1000003u + epoch_;  // public, new each epoch
  aggregation_ = service_->Add(request, now_us);
  if (aggregation_ == 0) current_.aggregation = "refused: " + service_->last_refusal();
}

std::vector<RoundStart> LumosTrainJob::OnAggregationRecord(uint32_t device, uint32_t kind,
                                                           const std::vector<uint8_t>& bytes, uint64_t now_us) {
  if (service_ == nullptr) {
    ++summary_.protocol_errors;  // no secure sum in this job
    return {};
  }
  // The service tells late, rejected and accepted records apart and
  // counts them (its totals).
  (void)service_->OnRecord(device, kind, std::span<const uint8_t>(bytes.data(), bytes.size()), now_us);
  return Poll(now_us);
}

// Records the service queued, to their devices in `round` (after whatever
// the job queued before them).
void LumosTrainJob::FlushAggregationRecords(uint32_t round) {
  if (service_ == nullptr) return;
  for (secagg::AggRecord& r : service_->TakeRecords()) {
    data_.push_back(DeviceData{r.device, round, r.kind, std::move(r.bytes)});
  }
}

void LumosTrainJob::SettleAggregation() {
  // What the service still has for the devices belongs to this epoch's
  // round, before anything of the next.
  FlushAggregationRecords(EpochRound(epoch_));
  for (auto& [id, d] : devices_) d.done = false;
  if (aggregation_ == 0) {
    ++summary_.aggregations_aborted;
    return;
  }
  const secagg::AggregationResult& r = service_->result(aggregation_);
  CountAggregationTraffic(r);
  // Its reporters are the epoch's contributors; everyone else asked
  // straggled.
  for (uint32_t id : r.included) {
    auto it = devices_.find(id);
    if (it != devices_.end() && it->second.asked) it->second.done = true;
  }
  if (r.state != secagg::AggregationState::kDone) {
    current_.aggregation = "aborted (" + std::string(secagg::AbortReasonName(r.abort_reason)) + "): " + r.message;
    ++summary_.aggregations_aborted;
    return;
  }
  if (!DecodeSecureSums(r.sum, r.included.size())) {
    current_.aggregation = "implausible sums";
    ++summary_.aggregations_aborted;
    return;
  }
  current_.aggregation = "done";
  ++summary_.aggregations_done;
  if (link()) {
    for (auto& [id, d] : devices_) {
      if (d.done) CountLinkScores(d);
    }
  }
}

// The sums into the epoch's counters. A device can shift the sum by what
// it puts in (as it could its own gradient without secure sum), but counts
// that no set of honest devices could give (negative, above the reporters,
// more correct than labelled) leave the epoch without an update.
bool LumosTrainJob::DecodeSecureSums(const std::vector<uint32_t>& sum, size_t included) {
  const size_t n = layout_.total;
  if (sum.size() != tf::TrainSecureLength(static_cast<uint32_t>(n))) return false;
  const uint32_t* extra = sum.data() + n;
  const auto count = [&](uint32_t word) { return Signed(extra[word]); };
  const int64_t reporters = static_cast<int64_t>(included);
  const int64_t trained = count(tf::kSecureTrained), terms = count(tf::kSecureTerms);
  bool plausible = trained >= 0 && trained <= reporters && terms >= trained && count(tf::kSecureClippers) >= 0 &&
                   count(tf::kSecureClippers) <= reporters && count(tf::kSecureClipped) >= 0;
  for (int s = 0; s < sl::kSplits; ++s) {
    const int64_t labelled = count(tf::kSecureLabelled + s), correct = count(tf::kSecureCorrect + s);
    plausible = plausible && labelled >= 0 && labelled <= reporters && correct >= 0 && correct <= labelled;
  }
  if (!plausible) return false;
  std::vector<float> values(n);
  float losses[2] = {0, 0};
  if (!sa::DecodeFixedPointSum(CodeOf(options_.secure_clip, secure_scale_log2_), Span<const uint32_t>(sum.data(), n),
                               Span<float>(values))
           .ok() ||
      !sa::DecodeFixedPointSum(CodeOf(tf::kTrainSecureLossClip, secure_loss_scale_log2_),
                               Span<const uint32_t>(extra + tf::kSecureLoss, 2), Span<float>(losses))
           .ok()) {
    return false;
  }
  std::copy(values.begin(), values.end(), sum_.begin());
  current_.trained = static_cast<uint32_t>(trained);
  loss_sum_ = losses[0];
  current_.clippers = static_cast<uint64_t>(count(tf::kSecureClippers));
  current_.clipped = static_cast<uint64_t>(count(tf::kSecureClipped));
  if (link()) {
    current_.terms = static_cast<uint64_t>(terms);
    loss_terms_ = static_cast<uint64_t>(terms);
    return true;
  }
  validation_loss_sum_ = losses[1];
  for (int s = 0; s < sl::kSplits; ++s) {
    current_.labelled[s] = static_cast<uint32_t>(count(tf::kSecureLabelled + s));
    correct_[s] = static_cast<uint32_t>(count(tf::kSecureCorrect + s));
  }
  return true;
}

// Bytes per device: the aggregation's records both ways, and the sealed
// peer messages each device relays to its mask peers.
void LumosTrainJob::CountAggregationTraffic(const secagg::AggregationResult& r) {
  uint64_t down = 0, peers = 0;
  for (const auto& [id, t] : r.traffic) {
    auto it = devices_.find(id);
    if (it == devices_.end()) continue;
    Device& d = it->second;
    if (d.bytes_up == 0 && t.bytes_received > 0) ++uploaders_;
    d.bytes_up += t.bytes_received;
    bytes_up_total_ += t.bytes_received;
    down += t.bytes_sent;
    peers += service_->PeersOf(aggregation_, id).size();
  }
  if (r.traffic.empty()) return;
  const uint64_t devices = r.traffic.size();
  current_.bytes_down += down / devices;
  current_.peer_bytes = peers * (sa::kAggPeerMessageBytes + protocol::kSealedOverheadBytes) / devices;
}

std::vector<RoundStart> LumosTrainJob::EndEpoch(uint64_t now_us, bool deadline) {
  if (SecureEpoch()) SettleAggregation();
  current_.deadline = deadline;
  current_.seconds = Seconds(round_started_us_, now_us);
  for (auto& [id, d] : devices_) {
    if (!d.asked) continue;
    if (d.done) {
      ++current_.done;
    } else {
      // Missed the deadline (or unreachable): a straggler of this epoch
      // only; whatever it uploaded is dropped.
      ++current_.stragglers;
      d.chunks.clear();
      d.scores.clear();
    }
  }
  uint64_t divisor = 0;
  if (link()) {
    // One negative histogram for both splits: the evaluation partners are
    // not edges of either.
    current_.auc[1] = sl::BinnedAuc(histogram_[0], histogram_[2]);
    current_.auc[2] = sl::BinnedAuc(histogram_[1], histogram_[2]);
    current_.loss = Ratio(loss_sum_, loss_terms_);
    // The devices' losses are sums over their terms (positives and
    // negatives): dividing by all terms makes the step the mean term's.
    divisor = current_.terms;
  } else {
    for (int s = 0; s < sl::kSplits; ++s) {
      current_.accuracy[s] = Ratio(correct_[s], current_.labelled[s]);
    }
    current_.validation_loss = Ratio(validation_loss_sum_, current_.labelled[1]);
    current_.loss = current_.train ? Ratio(loss_sum_, current_.trained) : Ratio(train_loss_sum_, train_labelled_);
    // Every loss is a mean over the training nodes (Lumos Eq. 31 pools a
    // node's embedding over its leaves; the loss is taken once per labelled
    // training node), so the summed contributions are divided by the number
    // of losses taken.
    divisor = current_.trained;
  }
  current_.bytes_up = uploaders_ ? bytes_up_total_ / uploaders_ : 0;
  if (current_.train && divisor > 0) {
    const float scale = 1.0f / static_cast<float>(divisor);
    for (float& g : sum_) g *= scale;
    mean_gradient_ = sum_;
    current_.updated = adam_.Step(std::span<float>(params_), std::span<const float>(sum_));
    if (current_.updated) ++summary_.epochs_updated;
  }
  summary_.stragglers += current_.stragglers;
  summary_.discarded += current_.discarded;
  summary_.clipped += current_.clipped;
  summary_.max_abs_gradient = std::max(summary_.max_abs_gradient, current_.max_abs_gradient);
  // The best validation accuracy (link: AUC) and the test one with it, as
  // the centralized baselines report them (server/lumos/training
  // central.cc).
  const double* metric = link() ? current_.auc : current_.accuracy;
  if (Better(metric[1], summary_.best_validation, epochs_.empty())) {
    summary_.best_validation = metric[1];
    summary_.test_at_best = metric[2];
    summary_.best_epoch = current_.epoch;
  }
  epochs_.push_back(current_);
  if (!current_.train) {
    std::copy(std::begin(current_.accuracy), std::end(current_.accuracy), std::begin(summary_.final_accuracy));
    std::copy(std::begin(current_.labelled), std::end(current_.labelled), std::begin(summary_.final_labelled));
    std::copy(std::begin(current_.auc), std::end(current_.auc), std::begin(summary_.final_auc));
    return StartReport(now_us);
  }
  return StartEpoch(now_us);
}

std::vector<RoundStart> LumosTrainJob::StartReport(uint64_t now_us) {
  summary_.seconds_epochs = Seconds(epochs_started_us_, now_us);
  phase_ = Phase::kReport;
  round_started_us_ = now_us;
  RoundStart start;
  start.round = ReportRound();
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = Parameters(tf::TrainPhase::kReport, 0, false);
  for (auto& [id, d] : devices_) {
    d.asked = d.ready;
    d.inactive = d.done = d.bad = false;
    d.chunks.clear();
    d.scores.clear();
    if (d.ready) start.devices.push_back(id);
  }
  waiting_ = static_cast<uint32_t>(start.devices.size());
  std::vector<RoundStart> out;
  if (start.devices.empty()) {
    Finish(now_us);
    return out;
  }
  out.push_back(std::move(start));
  return out;
}

std::vector<DeviceData> LumosTrainJob::TakeData() {
  // Also after the secure epochs: the service may still tell a late device
  // that its aggregation is over.
  FlushAggregationRecords(EpochRound(epoch_));
  return std::exchange(data_, {});
}

void LumosTrainJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  // Secure sum: gone from the aggregation too, whatever its step (also
  // after its report: its reveal may still be due).
  if (SecureEpoch() && aggregation_ != 0) service_->MarkUnreachable(device, now_us);
  Device& d = it->second;
  if (!d.asked || d.done || d.inactive) return;
  // Inactive for the rest of this round only: it is asked again next round
  // (a device that never got its setup is not ready, so it never is).
  d.inactive = true;
  d.chunks.clear();
  d.scores.clear();
  --waiting_;
  // Its neighbours wait for its leaf embeddings and gradients: they are
  // told at the next poll (one notice for all given up on meanwhile).
  if (phase_ == Phase::kEpoch) gone_.push_back(device);
}

void LumosTrainJob::TellGone() {
  summary_.gone += gone_.size();
  std::sort(gone_.begin(), gone_.end());
  const uint32_t round = EpochRound(epoch_);
  std::vector<std::vector<uint8_t>> records;
  for (size_t first = 0; first < gone_.size(); first += tf::kTrainGoneIdsPerRecord) {
    const size_t n = std::min(tf::kTrainGoneIdsPerRecord, gone_.size() - first);
    std::vector<uint8_t> r(tf::TrainPeersGoneBytes(n));
    const Span<const uint32_t> ids(gone_.data() + first, n);
    const Result<size_t> size = tf::EncodeTrainPeersGone(epoch_, ids, ByteSpan(r.data(), r.size()));
    if (!size.ok()) continue;  // never: epoch >= 1 and 1..kTrainGoneIdsPerRecord ids
    records.push_back(std::move(r));
  }
  gone_.clear();
  // The server does not know who neighbours whom: every device still at
  // work on the epoch is told (as the neighbour-echo job does).
  for (const auto& [id, d] : devices_) {
    if (!d.asked || d.done || d.inactive) continue;
    for (const std::vector<uint8_t>& r : records) data_.push_back(DeviceData{id, round, tf::kTrainPeersGone, r});
  }
}

std::vector<RoundStart> LumosTrainJob::Poll(uint64_t now_us) {
  const uint64_t elapsed_us = now_us - round_started_us_;
  switch (phase_) {
    case Phase::kSetup: {
      if (waiting_ > 0 && elapsed_us <= uint64_t{options_.round_deadline_ms} * 1000) return {};
      for (auto& [id, d] : devices_) {
        if (!d.responded) summary_.missed_setup.push_back(id);
      }
      summary_.seconds_setup = Seconds(round_started_us_, now_us);
      if (summary_.ready == 0) {
        Fail("no device finished setup", now_us);
        return {};
      }
      phase_ = Phase::kEpoch;
      epochs_started_us_ = now_us;
      return StartEpoch(now_us);
    }
    case Phase::kEpoch: {
      if (!gone_.empty()) TellGone();
      if (SecureEpoch()) {
        // The aggregation's steps have the epoch's deadline each: it
        // settles (done or aborted) by itself.
        if (aggregation_ != 0) service_->Poll(now_us);
        if (aggregation_ == 0 || service_->result(aggregation_).settled()) return EndEpoch(now_us, false);
        return {};
      }
      if (waiting_ == 0) return EndEpoch(now_us, false);
      if (elapsed_us > uint64_t{options_.epoch_deadline_ms} * 1000) return EndEpoch(now_us, true);
      return {};
    }
    case Phase::kReport: {
      if (waiting_ == 0 || elapsed_us > uint64_t{options_.round_deadline_ms} * 1000) Finish(now_us);
      return {};
    }
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

std::map<uint32_t, tf::TrainSummary> LumosTrainJob::Summaries() const {
  std::map<uint32_t, tf::TrainSummary> out;
  for (const auto& [id, d] : devices_) {
    if (d.has_summary) out[id] = d.summary;
  }
  return out;
}

void LumosTrainJob::Finish(uint64_t now_us) {
  if (phase_ == Phase::kReport) {
    summary_.seconds_report = Seconds(round_started_us_, now_us);
    for (const auto& [id, d] : devices_) {
      if (d.asked && !d.done) summary_.missed_report.push_back(id);
    }
  }
  phase_ = Phase::kFinished;
  for (const auto& [id, d] : devices_) {
    if (!d.has_summary) continue;
    ++summary_.summaries;
    summary_.epsilon_all_receivers = std::max(summary_.epsilon_all_receivers, d.summary.epsilon_all_receivers);
    summary_.epsilon_per_receiver = std::max(summary_.epsilon_per_receiver, d.summary.epsilon_per_receiver);
  }
  uint64_t up = 0, peer = 0, train_epochs = 0;
  for (const LumosTrainEpoch& e : epochs_) {
    if (!e.train) continue;
    up += e.bytes_up;
    peer += e.peer_bytes;
    ++train_epochs;
  }
  summary_.bytes_up_per_device_epoch = train_epochs ? up / train_epochs : 0;
  summary_.peer_bytes_per_device_epoch = train_epochs ? peer / train_epochs : 0;
  if (!options_.output_dir.empty() && !params_.empty()) WriteOutputs();
}

void LumosTrainJob::WriteOutputs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  const fs::path epochs = fs::path(options_.output_dir) / "lumos-train-epochs.tsv";
  {
    std::ofstream out(epochs);
    // Link mode names its own columns: ROC-AUCs ("nan": undefined) and the
    // scores behind them instead of accuracies (plot_learning_curve.py
    // reads either); node mode's columns stay as the scripts expect them.
    if (link()) {
      out << "epoch\ttrain\tloss\tterms\tvalidation_auc\ttest_auc\tvalidation_edges\ttest_edges\tnegatives"
             "\tdevices_done\tstragglers\tbytes_down\tbytes_up\tseconds";
    } else {
      out << "epoch\ttrain\tloss\ttrain_accuracy\tvalidation_accuracy\ttest_accuracy\tvalidation_loss\tdevices_done"
             "\tstragglers\tbytes_down\tbytes_up\tseconds";
    }
    // Secure sum appends its own columns (the scripts read columns by name).
    out << (options_.secure_sum ? "\tclipped\tpeer_bytes\taggregation\n" : "\n");
    for (const LumosTrainEpoch& e : epochs_) {
      out << e.epoch << '\t' << (e.train ? 1 : 0) << '\t' << e.loss << '\t';
      if (link()) {
        out << e.terms << '\t' << e.auc[1] << '\t' << e.auc[2] << '\t' << e.positives[1] << '\t' << e.positives[2]
            << '\t' << e.negatives << '\t';
      } else {
        out << e.accuracy[0] << '\t' << e.accuracy[1] << '\t' << e.accuracy[2] << '\t' << e.validation_loss << '\t';
      }
      out << e.done << '\t' << e.stragglers << '\t' << e.bytes_down << '\t' << e.bytes_up << '\t' << e.seconds;
      if (options_.secure_sum) {
        out << '\t' << e.clipped << '\t' << e.peer_bytes << '\t' << (e.aggregation.empty() ? "-" : e.aggregation);
      }
      out << '\n';
    }
    if (!out) {
      summary_.error = "writing " + epochs.string();
      return;
    }
  }
  summary_.epochs_path = epochs.string();
  const fs::path params = fs::path(options_.output_dir) / "lumos-train-parameters.bin";
  std::vector<uint8_t> bytes(4 * params_.size());
  for (size_t i = 0; i < params_.size(); ++i) StoreF32Le(params_[i], bytes.data() + 4 * i);
  std::ofstream out(params, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    summary_.error = "writing " + params.string();
    return;
  }
  summary_.parameters_path = params.string();
}

bool LumosTrainJob::succeeded() const {
  return finished() && summary_.error.empty() && summary_.epochs_updated > 0;
}

std::string LumosTrainJob::ProgressLine() const {
  std::ostringstream o;
  switch (phase_) {
    case Phase::kSetup:
      o << "lumos-train round 1 (setup): " << summary_.ready << "/" << summary_.participants << " ready, " << waiting_
        << " waiting";
      break;
    case Phase::kEpoch: {
      o << "lumos-train epoch " << epoch_ << "/" << options_.epochs << (current_.train ? "" : " (evaluation)") << ": ";
      if (SecureEpoch() && aggregation_ != 0) {
        o << "secure sum, step " << secagg::StepName(service_->result(aggregation_).step) << ", "
          << service_->awaited(aggregation_) << " of " << current_.devices << " devices still awaited";
      } else {
        o << (current_.devices - waiting_) << "/" << current_.devices << " done";
      }
      if (!epochs_.empty()) {
        const LumosTrainEpoch& e = epochs_.back();
        o << "; epoch " << e.epoch << " loss " << e.loss;
        if (link()) {
          o << " auc validation " << e.auc[1] << " test " << e.auc[2];
        } else {
          o << " accuracy train " << e.accuracy[0] << " validation " << e.accuracy[1] << " test " << e.accuracy[2];
        }
        o << ", " << e.stragglers << " stragglers";
      }
      break;
    }
    case Phase::kReport:
      o << "lumos-train report round: " << waiting_ << " waiting";
      break;
    default:
      o << (finished() ? "finished" : "idle");
  }
  return o.str();
}

void LumosTrainJob::LogSummary(Logger& log, uint64_t job_id) const {
  const LumosTrainSummary& s = summary_;
  const bool link_task = link();
  // Link mode says so and reports ROC-AUCs where node mode reports
  // accuracies (best_validation and test_at_best are AUCs then); node
  // mode's line keeps its keys for the scripts that read it
  // (examples/lumos/run-lumos.sh).
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "lumos-train"},
                            {"verified", succeeded()},
                            {"participants", s.participants},
                            {"ready", s.ready},
                            {"refused", s.refused.size()},
                            {"missed_setup", s.missed_setup.size()},
                            {"missed_report", s.missed_report.size()},
                            {"model", options_.shape.layer == gnn::LayerKind::kGat ? "gat" : "gcn"},
                            {"privacy", options_.paper ? "paper" : "strict"},
                            {"tree", options_.ego_star ? "ego" : "tree"},
                            {"epochs", options_.epochs},
                            {"epochs_updated", s.epochs_updated},
                            {"parameters", layout_.total},
                            {link_task ? "task" : "final_train_accuracy",
                             link_task ? LogValue("link") : LogValue(s.final_accuracy[0])},
                            {link_task ? "final_validation_auc" : "final_validation_accuracy",
                             link_task ? s.final_auc[1] : s.final_accuracy[1]},
                            {link_task ? "final_test_auc" : "final_test_accuracy",
                             link_task ? s.final_auc[2] : s.final_accuracy[2]},
                            {"final_test_nodes", s.final_labelled[2]},
                            {"best_epoch", s.best_epoch},
                            {"best_validation", s.best_validation},
                            {"test_at_best", s.test_at_best},
                            {"stragglers", s.stragglers},
                            {"gone", s.gone},
                            {"discarded", s.discarded},
                            {"bytes_down_per_device_epoch", s.bytes_down_per_device_epoch},
                            {"bytes_up_per_device_epoch", s.bytes_up_per_device_epoch},
                            {"summaries", s.summaries},
                            {"epsilon_budget", static_cast<double>(options_.epsilon)},
                            {"label_epsilon", static_cast<double>(options_.label_epsilon)},  // used in strict mode only
                            {"epsilon_all_receivers", s.epsilon_all_receivers},
                            {"epsilon_per_receiver", s.epsilon_per_receiver},
                            {"seconds_setup", s.seconds_setup},
                            {"seconds_epochs", s.seconds_epochs},
                            {"seconds_report", s.seconds_report},
                            {"epochs_file", s.epochs_path},
                            {"parameters_file", s.parameters_path},
                            {"ignored", s.ignored},
                            {"error", s.error},
                            {"protocol_errors", s.protocol_errors},
                            {"max_abs_gradient", s.max_abs_gradient},
                            {"secure_sum", options_.secure_sum},
                            {"secure_clip", static_cast<double>(options_.secure_clip)},
                            {"aggregations_done", s.aggregations_done},
                            {"aggregations_aborted", s.aggregations_aborted},
                            {"clipped", s.clipped},
                            {"peer_bytes_per_device_epoch", s.peer_bytes_per_device_epoch}});
  // Secure sum: every training epoch that updated nothing because its
  // aggregation did not finish, and why.
  for (const LumosTrainEpoch& e : epochs_) {
    if (!options_.secure_sum || !e.train || e.aggregation == "done") continue;
    log.Info("lumos_train_aggregation_failed", {{"job", job_id}, {"epoch", e.epoch}, {"outcome", e.aggregation}});
  }
  const char* secure_note =
      "secure sum: in training epochs the server learns only sums over the devices that completed each "
      "aggregation (gradient, losses taken, loss terms, loss sums, per split labelled and correct nodes, values "
      "clipped) and who completed it; the evaluation epoch's metrics, the link task's binned scores and the summaries "
      "stay per device";
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "lumos-train"},
            {"note",
             options_.secure_sum ? secure_note
             : link_task
                 ? "server learns: the partner pairing it drew; per device and epoch its tree's gradient contribution, "
                   "its loss sum and number of loss terms, and the binned scores of its held-out edges and evaluation "
                   "partners (by kind, without ids: how many held-out edges it has); counts against the pairing can "
                   "reveal that a drawn pair is an edge; at the end its workload, message counts and feature-release "
                   "epsilon; never a feature or another edge"
                 : "server learns: per device and epoch its tree's gradient contribution and its metrics (split, "
                   "labelled, loss, prediction correct, pool size); at the end its workload, message counts and "
                   "feature-release epsilon; never a feature, label or neighbour"},
            {"paper_mode", options_.paper}});
}

}  // namespace nodefl::server::jobs
