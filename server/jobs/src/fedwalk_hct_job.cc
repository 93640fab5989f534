// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/fedwalk_hct_job.h"
#include "nodefl/server/jobs/fedwalk_walk_handoff.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/common/bin_plan.h"
#include "nodefl/server/fedwalk/dissimilarity/features.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/common/transcript_file.h"

namespace nodefl::server::jobs {

namespace {
// Largest truncated mass of a codebook row that still counts as the
// exponential mechanism (the paper-mode BlogCatalog rows lose ~1e-18).
constexpr double kMaxHarmlessTruncatedMass = 1e-9;
}  // namespace

namespace fw = nodefl::fedwalk;
using State = HctDeviceRecord::State;

namespace {

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

// Finite and within the feature store's range (features.h): a device must
// not be able to make a distance infinite, or the whole job fail, with one
// absurd value. Honest noised counts are far inside it.
bool AllUsable(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) {
    return std::isfinite(x) && std::fabs(x) <= fedwalk::kMaxMatrixValue;
  });
}

}  // namespace

FedWalkHctJob::FedWalkHctJob(FedWalkHctOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), params_(options_.params), participants_(std::move(participants)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id] = HctDeviceRecord{};
  params_.vertex_count = participants_.empty() ? 1 : participants_.back() + 1;
  if (params_.bins == 0) params_.bins = fedwalk::DefaultBins(participants_.size());
  summary_.participants = static_cast<uint32_t>(participants_.size());
  transcript_.mode = params_.mode;
  transcript_.vertex_count = params_.vertex_count;
  transcript_.bins = params_.bins;
  transcript_.buckets = params_.buckets;
}

FedWalkHctJob::~FedWalkHctJob() {
  worker_.Wait();
}

std::vector<RoundStart> FedWalkHctJob::Begin(uint64_t now_us) {
  phase_ = Phase::kBinning;
  round_started_us_ = now_us;
  uint64_t seed = options_.bin_plan_seed;
  if (seed == 0) {
    std::random_device rd;
    seed = (uint64_t{rd()} << 32) | rd();
  }
  transcript_.bin_plan = fedwalk::MakeBinPlan(participants_, params_.vertex_count, params_.bins, seed);
  summary_.bin_plan_bytes = transcript_.bin_plan.size();
  vectors_.assign(size_t{params_.vertex_count} * params_.bins, std::numeric_limits<float>::quiet_NaN());

  RoundStart start;
  start.round = fw::kRoundBinning;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters.resize(fw::kHctParametersBytes);
  if (!fw::EncodeHctParameters(params_, ByteSpan(start.parameters)).ok()) {
    compute_error_ = "invalid job parameters";
    Finish();
    return {};
  }
  start.artefacts.push_back(
      {static_cast<uint32_t>(fw::HctArtefact::kBinPlan), std::make_shared<std::vector<uint8_t>>(transcript_.bin_plan)});
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  if (participants_.empty()) Finish();
  return out;
}

void FedWalkHctJob::Fail(HctDeviceRecord& record, uint32_t round, std::string why) {
  record.state = State::kFailed;
  record.failed_round = round;
  record.why = std::move(why);
}

std::vector<RoundStart> FedWalkHctJob::OnUpload(uint32_t device, uint32_t round, uint32_t artefact,
                                                std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  HctDeviceRecord& r = it->second;
  const uint32_t k = params_.bins;
  if (round == fw::kRoundBinning && r.state == State::kBinning && phase_ == Phase::kBinning &&
      artefact == static_cast<uint32_t>(fw::HctArtefact::kDegreeVector)) {
    if (bytes.size() != size_t{4} * k) {
      Fail(r, round, "degree vector of the wrong size");
      return Poll(now_us);
    }
    std::vector<float> row(k);
    for (uint32_t i = 0; i < k; ++i) row[i] = LoadF32Le(bytes.data() + 4 * i);
    if (!AllUsable(row)) {
      Fail(r, round, "degree vector with a non-finite or out-of-range value");
      return Poll(now_us);
    }
    std::copy(row.begin(), row.end(), vectors_.begin() + static_cast<std::ptrdiff_t>(size_t{device} * k));
    r.has_vector = true;
    return {};
  }
  if (round == fw::kRoundMatrix && r.state == State::kMatrix && phase_ == Phase::kMatrix) {
    if (params_.mode == PrivacyMode::kPaper && artefact == static_cast<uint32_t>(fw::HctArtefact::kOrderedMatrix)) {
      if (bytes.size() < 4) {
        Fail(r, round, "ordered matrix without a row count");
        return Poll(now_us);
      }
      const uint32_t rows = LoadU32Le(bytes.data());
      if (rows > params_.vertex_count || bytes.size() != 4 + size_t{rows} * k * 4) {
        Fail(r, round, "ordered matrix of the wrong size");
        return Poll(now_us);
      }
      std::vector<float> m(size_t{rows} * k);
      for (size_t i = 0; i < m.size(); ++i) m[i] = LoadF32Le(bytes.data() + 4 + 4 * i);
      if (!AllUsable(m)) {
        Fail(r, round, "ordered matrix with a non-finite or out-of-range value");
        return Poll(now_us);
      }
      transcript_.ordered_matrices[device] = std::move(m);
      r.has_upload = true;
      return {};
    }
    if (params_.mode == PrivacyMode::kStrict &&
        artefact == static_cast<uint32_t>(fw::HctArtefact::kDegreeHistogram)) {
      const size_t cells = size_t{k} * params_.buckets;
      if (bytes.size() != 4 * cells) {
        Fail(r, round, "histogram of the wrong size");
        return Poll(now_us);
      }
      std::vector<int32_t> h(cells);
      for (size_t i = 0; i < cells; ++i) h[i] = LoadI32Le(bytes.data() + 4 * i);
      transcript_.histograms[device] = std::move(h);
      r.has_upload = true;
      return {};
    }
  }
  // A device that reconnects re-sends a round's upload it may not have
  // finished sending (the same stored values; hct_role.h): once its report
  // for that round is in, a repeat changes nothing.
  const bool already_reported = (round == fw::kRoundBinning && r.state != State::kBinning) ||
                                (round == fw::kRoundMatrix && r.state != State::kBinning && r.state != State::kMatrix);
  if (already_reported && r.state != State::kFailed && r.state != State::kMissed) {
    ++summary_.repeated_uploads;
    return {};
  }
  // Anything else is out of phase or of the wrong kind: the device does
  // not follow the protocol, and it is left out from here on.
  ++summary_.protocol_errors;
  if (r.state == State::kBinning || r.state == State::kMatrix || r.state == State::kPublish) {
    Fail(r, round, "unexpected upload");
  }
  return Poll(now_us);
}

std::vector<RoundStart> FedWalkHctJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                                uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  HctDeviceRecord& r = it->second;
  const bool ok = report.code == 0;
  const State expected = round == fw::kRoundBinning ? State::kBinning
                         : round == fw::kRoundMatrix ? State::kMatrix
                         : round == fw::kRoundPublish ? State::kPublish
                                                      : State::kFailed;
  if (r.state != expected) {
    // Repeats after a reconnect, or reports for a round the device was
    // already dropped from: nothing to do.
    return {};
  }
  if (round != fw::kRoundPublish) {
    r.epsilon += report.epsilon;
    r.releases += report.releases;
    r.unbounded = r.unbounded || report.unbounded;
  }
  if (!ok) {
    Fail(r, round, "device reported status " + std::to_string(report.code));
    return Poll(now_us);
  }
  if (round == fw::kRoundBinning) {
    if (!r.has_vector) {
      Fail(r, round, "report without a degree vector");
    } else {
      r.state = State::kMatrix;
    }
  } else if (round == fw::kRoundMatrix) {
    if (!r.has_upload) {
      Fail(r, round, "report without an upload");
    } else {
      r.state = State::kPublish;
    }
  } else {
    r.codebook_rows_kept = report.received;
    r.neighbours_in_dictionary = report.expected;
    r.state = State::kDone;
  }
  return Poll(now_us);
}

bool FedWalkHctJob::RoundComplete(State state) const {
  return std::none_of(devices_.begin(), devices_.end(), [state](const auto& d) { return d.second.state == state; });
}

void FedWalkHctJob::MarkMissed(State state, uint32_t round) {
  for (auto& [id, r] : devices_) {
    if (r.state == state) MarkMissed(r, round, "missed the round " + std::to_string(round) + " deadline");
  }
}

void FedWalkHctJob::MarkMissed(HctDeviceRecord& record, uint32_t round, std::string why) {
  record.state = State::kMissed;
  record.failed_round = round;
  record.why = std::move(why);
}

void FedWalkHctJob::OnUndeliverable(uint32_t device, uint64_t /*now_us*/) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  HctDeviceRecord& r = it->second;
  uint32_t round = 0;
  if (phase_ == Phase::kBinning && r.state == State::kBinning) {
    round = fw::kRoundBinning;
  } else if (phase_ == Phase::kMatrix && r.state == State::kMatrix) {
    round = fw::kRoundMatrix;
  } else if (phase_ == Phase::kPublish && r.state == State::kPublish) {
    round = fw::kRoundPublish;
  } else {
    return;  // it owes nothing now (a device that will owe the publish round is asked then)
  }
  MarkMissed(r, round, "unreachable in round " + std::to_string(round));
  ++summary_.unreachable;
}

std::vector<RoundStart> FedWalkHctJob::Poll(uint64_t now_us) {
  const bool late = now_us - round_started_us_ > uint64_t{options_.round_deadline_ms} * 1000;
  switch (phase_) {
    case Phase::kBinning:
      if (RoundComplete(State::kBinning) || late) {
        MarkMissed(State::kBinning, fw::kRoundBinning);
        summary_.seconds_binning = Seconds(round_started_us_, now_us);
        return StartMatrixRound(now_us);
      }
      return {};
    case Phase::kMatrix:
      if (RoundComplete(State::kMatrix) || late) {
        MarkMissed(State::kMatrix, fw::kRoundMatrix);
        summary_.seconds_matrix = Seconds(round_started_us_, now_us);
        StartCompute(now_us);
      }
      return {};
    case Phase::kComputing:
      if (compute_done_.load()) {
        worker_.Wait();
        if (!compute_error_.empty()) {
          Finish();
          return {};
        }
        return StartPublishRound(now_us);
      }
      return {};
    case Phase::kPublish:
      if (RoundComplete(State::kPublish) || late) {
        MarkMissed(State::kPublish, fw::kRoundPublish);
        summary_.seconds_publish = Seconds(round_started_us_, now_us);
        Finish();
      }
      return {};
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

std::vector<RoundStart> FedWalkHctJob::StartMatrixRound(uint64_t now_us) {
  phase_ = Phase::kMatrix;
  round_started_us_ = now_us;
  // The dictionary: only vectors of devices that completed round 1.
  transcript_.dictionary.assign(vectors_.size(), std::numeric_limits<float>::quiet_NaN());
  RoundStart start;
  start.round = fw::kRoundMatrix;
  start.deadline_ms = options_.round_deadline_ms;
  const uint32_t k = params_.bins;
  for (const auto& [id, r] : devices_) {
    if (r.state != State::kMatrix) continue;
    std::copy_n(vectors_.begin() + static_cast<std::ptrdiff_t>(size_t{id} * k), k,
                transcript_.dictionary.begin() + static_cast<std::ptrdiff_t>(size_t{id} * k));
    start.devices.push_back(id);
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(transcript_.dictionary.size() * 4);
  for (size_t i = 0; i < transcript_.dictionary.size(); ++i) StoreF32Le(transcript_.dictionary[i], bytes->data() + 4 * i);
  summary_.dictionary_bytes = bytes->size();
  start.artefacts.push_back({static_cast<uint32_t>(fw::HctArtefact::kDictionary), std::move(bytes)});
  std::vector<RoundStart> out;
  if (start.devices.empty()) {
    compute_error_ = "no device completed round 1";
    Finish();
    return out;
  }
  out.push_back(std::move(start));
  return out;
}

void FedWalkHctJob::StartCompute(uint64_t now_us) {
  phase_ = Phase::kComputing;
  round_started_us_ = now_us;
  leaves_.clear();
  for (const auto& [id, r] : devices_) {
    if (r.state == State::kPublish) leaves_.push_back(id);
  }
  summary_.vertices_in_tree = static_cast<uint32_t>(leaves_.size());
  worker_.Start(options_.executor, [this] { RunCompute(); });
}

void FedWalkHctJob::RunCompute() {
  fedwalk::HctPipelineOptions options;
  options.linkage = fedwalk::ParseLinkage(options_.linkage).value_or(fedwalk::Linkage::kAverage);
  options.codebook.epsilon = params_.epsilon_walk;
  options.codebook.k = params_.codebook_k;
  options.threads = options_.compute_threads;
  options.scaled_encoder = options_.scaled_encoder;
  options.codebook.score_clip = options_.score_clip;
  fedwalk::HctPipelineResult r = fedwalk::RunHctPipeline(transcript_, leaves_, options, &progress_);
  summary_.seconds_dissimilarity = r.seconds_dissimilarity;
  summary_.seconds_clustering = r.seconds_clustering;
  summary_.seconds_codebook = r.seconds_codebook;
  summary_.dissimilarity_bytes = r.dissimilarity_bytes;
  summary_.score_sensitivity = r.score_sensitivity;
  summary_.max_abs_score = r.max_abs_score;
  summary_.epsilon_per_encoding = r.epsilon_per_encoding;
  if (r.error.empty()) {
    summary_.max_truncated_mass = r.codebook->max_truncated_mass();
    *tree_bytes_ = r.tree->Serialize();
    *codebook_bytes_ = r.codebook->Serialize();
    summary_.tree_bytes = tree_bytes_->size();
    summary_.codebook_bytes = codebook_bytes_->size();
  } else {
    compute_error_ = r.error;
  }
  compute_done_.store(true);
}

std::vector<RoundStart> FedWalkHctJob::StartPublishRound(uint64_t now_us) {
  phase_ = Phase::kPublish;
  round_started_us_ = now_us;
  RoundStart start;
  start.round = fw::kRoundPublish;
  start.deadline_ms = options_.round_deadline_ms;
  start.artefacts.push_back({static_cast<uint32_t>(fw::HctArtefact::kTree), tree_bytes_});
  start.artefacts.push_back({static_cast<uint32_t>(fw::HctArtefact::kCodebook), codebook_bytes_});
  for (const auto& [id, r] : devices_) {
    if (r.state == State::kPublish) start.devices.push_back(id);
  }
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

void FedWalkHctJob::Finish() {
  phase_ = Phase::kFinished;
  std::vector<double> eps;
  for (const auto& [id, r] : devices_) {
    if (r.state == State::kDone) ++summary_.completed;
    if (r.state == State::kMissed) ++summary_.missed;
    if (r.state == State::kFailed) ++summary_.failed;
    if (r.unbounded) ++summary_.unbounded_devices;
    eps.push_back(r.epsilon);
  }
  if (!eps.empty()) {
    std::sort(eps.begin(), eps.end());
    summary_.epsilon_max = eps.back();
    summary_.epsilon_median = eps.size() % 2 == 1 ? eps[eps.size() / 2]
                                                  : (eps[eps.size() / 2 - 1] + eps[eps.size() / 2]) / 2;
  }
  WriteOutputs();
}

std::vector<uint32_t> FedWalkHctJob::CompletedDevices() const {
  std::vector<uint32_t> out;
  for (const auto& [id, r] : devices_) {
    if (r.state == State::kDone) out.push_back(id);
  }
  return out;
}

std::vector<uint8_t> FedWalkHctJob::HandOff() const {
  if (!finished() || !compute_error_.empty()) return {};
  WalkHandOff h;
  h.mode = params_.mode;
  h.vertex_count = params_.vertex_count;
  h.epsilon_per_encoding = summary_.epsilon_per_encoding;
  h.score_sensitivity = summary_.score_sensitivity;
  h.scaled_encoder = options_.scaled_encoder;
  h.devices = CompletedDevices();
  return EncodeWalkHandOff(h);
}

bool FedWalkHctJob::succeeded() const {
  return finished() && compute_error_.empty() && summary_.completed == summary_.participants &&
         summary_.protocol_errors == 0;
}

std::string FedWalkHctJob::ProgressLine() const {
  std::ostringstream o;
  auto count = [this](State s) {
    return std::count_if(devices_.begin(), devices_.end(), [s](const auto& d) { return d.second.state == s; });
  };
  switch (phase_) {
    case Phase::kBinning:
      o << "round 1 (binning): " << (devices_.size() - static_cast<size_t>(count(State::kBinning))) << "/"
        << devices_.size() << " reported";
      break;
    case Phase::kMatrix:
      o << "round 2 (degree matrices): " << count(State::kPublish) << " uploaded, " << count(State::kMatrix)
        << " pending";
      break;
    case Phase::kComputing: {
      static const char* kStages[] = {"dissimilarities", "clustering", "codebook", "done"};
      const int stage = progress_.stage.load();
      o << "computing " << kStages[stage];
      const uint64_t total = progress_.total_pairs.load();
      if (stage == 0 && total > 0) {
        o << " " << (100 * progress_.done_pairs.load() / total) << "% of " << total << " pairs";
      }
      break;
    }
    case Phase::kPublish:
      o << "round 3 (publish): " << count(State::kDone) << " reported, " << count(State::kPublish) << " pending";
      break;
    default:
      o << "idle";
  }
  return o.str();
}

void FedWalkHctJob::LogSummary(Logger& log, uint64_t job_id) const {
  const HctSummary& s = summary_;
  log.Info("job_finished",
           {{"job", job_id},
            {"kind", "fedwalk-hct"},
            {"verified", succeeded()},
            {"mode", PrivacyModeName(params_.mode)},
            {"bins", uint32_t{params_.bins}},
            {"participants", s.participants},
            {"vertices_in_tree", s.vertices_in_tree},
            {"completed", s.completed},
            {"missed", s.missed},
            {"unreachable", s.unreachable},
            {"failed", s.failed},
            {"error", compute_error_},
            {"seconds_binning", s.seconds_binning},
            {"seconds_matrix", s.seconds_matrix},
            {"seconds_dissimilarity", s.seconds_dissimilarity},
            {"seconds_clustering", s.seconds_clustering},
            {"seconds_codebook", s.seconds_codebook},
            {"seconds_publish", s.seconds_publish},
            {"dissimilarity_bytes", s.dissimilarity_bytes},
            {"bin_plan_bytes", s.bin_plan_bytes},
            {"dictionary_bytes", s.dictionary_bytes},
            {"tree_bytes", s.tree_bytes},
            {"codebook_bytes", s.codebook_bytes},
            {"codebook_k", uint32_t{params_.codebook_k}},
            {"max_truncated_mass", s.max_truncated_mass},
            {"encoder", options_.scaled_encoder ? "scaled" : "raw"},
            {"score_clip", options_.score_clip},
            {"score_sensitivity", s.score_sensitivity},
            {"max_abs_score", s.max_abs_score},
            {"epsilon_per_encoding", s.epsilon_per_encoding},
            {"protocol_errors", s.protocol_errors}});
  // Devices sample the renormalised top-K entries of each Eq. 12 row. When a
  // row loses real mass to that cut, what they sample is not the
  // exponential mechanism and epsilon_per_encoding is not a guarantee.
  if (s.max_truncated_mass > kMaxHarmlessTruncatedMass) {
    log.Warn("codebook_truncation_breaks_guarantee",
             {{"job", job_id},
              {"max_truncated_mass", s.max_truncated_mass},
              {"codebook_k", uint32_t{params_.codebook_k}},
              {"encoder", options_.scaled_encoder ? "scaled" : "raw"},
              {"note", "Eq. 12 rows lost this much mass to the top-K cut: epsilon_per_encoding does not hold; "
                       "raise fedwalk_codebook_k (near-uniform scaled rows need K close to the vertex count)"}});
  }
  // The privacy ledger of this phase, per device (what each reported).
  log.Info("privacy_ledger", {{"job", job_id},
                              {"phase", "fedwalk-hct"},
                              {"mode", PrivacyModeName(params_.mode)},
                              {"epsilon_bins", params_.epsilon_bins},
                              {"epsilon_upload", params_.mode == PrivacyMode::kStrict ? params_.epsilon_upload : 0.0},
                              {"device_epsilon_max", s.epsilon_max},
                              {"device_epsilon_median", s.epsilon_median},
                              {"devices_with_unbounded_release", s.unbounded_devices},
                              {"note", params_.mode == PrivacyMode::kPaper
                                           ? "paper mode uploads M_v exactly: no DP bound on the neighbour set"
                                           : "per edge vs the server: twice the device total (both endpoints)"}});
  size_t listed = 0;
  for (const auto& [id, r] : devices_) {
    if (r.state != State::kMissed && r.state != State::kFailed) continue;
    if (++listed > 50) break;  // the output file lists them all
    log.Warn("device_left_out", {{"job", job_id}, {"device", id}, {"round", r.failed_round}, {"why", r.why}});
  }
}

void FedWalkHctJob::WriteOutputs() {
  if (options_.output_dir.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  const fs::path dir(options_.output_dir);
  auto write = [&dir](const char* name, const std::vector<uint8_t>& bytes) {
    std::ofstream f(dir / name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  if (!tree_bytes_->empty()) write("hct-tree.bin", *tree_bytes_);
  if (!codebook_bytes_->empty()) write("hct-codebook.bin", *codebook_bytes_);
  write("hct-bin-plan.bin", transcript_.bin_plan);
  write("hct-transcript.bin", fedwalk::SerializeTranscript(transcript_));
  std::ofstream devices(dir / "hct-devices.tsv");
  devices << "device\tstate\tround\tepsilon\treleases\tunbounded\tcodebook_rows\tneighbours_in_dictionary\twhy\n";
  static const char* kStates[] = {"binning", "matrix", "publish", "done", "missed", "failed"};
  for (const auto& [id, r] : devices_) {
    devices << id << '\t' << kStates[static_cast<int>(r.state)] << '\t' << r.failed_round << '\t' << r.epsilon << '\t'
            << r.releases << '\t' << (r.unbounded ? 1 : 0) << '\t' << r.codebook_rows_kept << '\t'
            << r.neighbours_in_dictionary << '\t' << r.why << '\n';
  }
}

}  // namespace nodefl::server::jobs
