// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/fedwalk_histogram_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/histogram_walks/cluster_partition.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/histogram_walks/spectral_partition.h"

namespace nodefl::server::jobs {

namespace fw = nodefl::fedwalk;
using State = HistogramDeviceRecord::State;

namespace {

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

// A device's reported epsilon may exceed the planned one only by the
// rounding of the discrete scale (which rounds down, never up); anything
// more is flagged.
constexpr double kEpsilonSlack = 1e-9;

}  // namespace

FedWalkHistogramJob::FedWalkHistogramJob(FedWalkHistogramOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), participants_(std::move(participants)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id] = HistogramDeviceRecord{};
  vertex_count_ = participants_.empty() ? 1 : participants_.back() + 1;
  summary_.participants = static_cast<uint32_t>(participants_.size());
  if (options_.seed == 0) {
    std::random_device rd;
    options_.seed = (uint64_t{rd()} << 32) | rd();
  }
  options_.walks.threads = options_.compute_threads;
  options_.walks.seed = options_.seed;
  options_.skipgram.threads = options_.compute_threads;
  options_.skipgram.seed = options_.seed;
}

FedWalkHistogramJob::~FedWalkHistogramJob() {
  worker_.Wait();
}

std::vector<RoundStart> FedWalkHistogramJob::Begin(uint64_t now_us) {
  if (participants_.empty()) {
    summary_.error = "no participants";
    Finish();
    return {};
  }
  std::string error;
  // Clusters are counted against the participants (a cluster per vertex at
  // most), not against the id range.
  const auto plan = fedwalk::PlanReleases(options_.plan, static_cast<uint32_t>(participants_.size()), &error);
  if (!plan) {
    summary_.error = "release plan: " + error;
    Finish();
    return {};
  }
  summary_.plan = *plan;
  for (const auto& r : summary_.plan) summary_.epsilon_planned += r.epsilon;
  if (options_.plan.scheme == fedwalk::PartitionScheme::kTreeCut) {
    summary_.error = "the tree-cut partition is for nodefl-histogram-bench only";
    Finish();
    return {};
  }
  return StartRound(now_us, fedwalk::RandomClusterPartition(participants_, vertex_count_,
                                                            summary_.plan[0].clusters, options_.seed));
}

std::vector<RoundStart> FedWalkHistogramJob::StartRound(uint64_t now_us, std::vector<uint16_t> partition) {
  ++round_;
  phase_ = Phase::kReleasing;
  round_started_us_ = now_us;
  const fedwalk::PlannedRelease& planned = summary_.plan[round_ - 1];
  fw::HistogramParameters params;
  params.release = static_cast<uint8_t>(round_);
  params.releases = static_cast<uint8_t>(summary_.plan.size());
  params.vertex_count = vertex_count_;
  params.clusters = planned.clusters;
  params.epsilon = planned.epsilon;
  RoundStart start;
  start.round = round_;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters.resize(fw::kHistogramParametersBytes);
  if (!fw::EncodeHistogramParameters(params, ByteSpan(start.parameters)).ok()) {
    summary_.error = "invalid round parameters";
    Finish();
    return {};
  }
  auto artefact = std::make_shared<std::vector<uint8_t>>(fedwalk::EncodeClusterPartition(partition));
  summary_.partition_bytes += artefact->size();
  start.artefacts.push_back({static_cast<uint32_t>(fw::HistogramArtefact::kPartition), std::move(artefact)});
  histograms_ = std::make_unique<fedwalk::ClusterHistograms>(std::move(partition), planned.clusters);
  for (auto& [id, r] : devices_) {
    if (r.state != State::kReleasing) continue;
    r.round = round_;
    r.has_upload = false;
    start.devices.push_back(id);
  }
  if (start.devices.empty()) {
    summary_.error = "no device left for release round " + std::to_string(round_);
    Finish();
    return {};
  }
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

void FedWalkHistogramJob::Fail(HistogramDeviceRecord& record, std::string why) {
  record.state = State::kFailed;
  record.why = std::move(why);
}

std::vector<RoundStart> FedWalkHistogramJob::OnUpload(uint32_t device, uint32_t round, uint32_t artefact,
                                                      std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  HistogramDeviceRecord& r = it->second;
  if (phase_ == Phase::kReleasing && round == round_ && r.state == State::kReleasing && r.round == round_ &&
      artefact == static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram)) {
    if (r.has_upload) {
      // Re-sent after a reconnect: the device sends its stored release
      // again (never re-noised); the first copy stands.
      ++summary_.repeated_uploads;
      return {};
    }
    const uint32_t clusters = histograms_->clusters();
    if (bytes.size() != fw::ClusterHistogramBytes(clusters)) {
      Fail(r, "histogram of the wrong size");
      return Poll(now_us);
    }
    std::vector<int32_t> cells(clusters);
    for (uint32_t c = 0; c < clusters; ++c) cells[c] = LoadI32Le(bytes.data() + 4 * size_t{c});
    if (!histograms_->SetRow(device, cells)) {
      Fail(r, "histogram from a device outside the partition");
      return Poll(now_us);
    }
    summary_.upload_bytes += bytes.size();
    r.has_upload = true;
    return {};
  }
  // A repeat of an earlier round's upload after a reconnect changes nothing.
  if (round < round_ && r.state != State::kFailed && r.state != State::kMissed) {
    ++summary_.repeated_uploads;
    return {};
  }
  ++summary_.protocol_errors;
  if (r.state == State::kReleasing) Fail(r, "unexpected upload");
  return Poll(now_us);
}

std::vector<RoundStart> FedWalkHistogramJob::OnReport(uint32_t device, uint32_t round,
                                                      const nodefl_wire_JobReport& report, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  HistogramDeviceRecord& r = it->second;
  if (phase_ != Phase::kReleasing || round != round_ || r.state != State::kReleasing || r.round != round_) {
    return {};  // a repeat after a reconnect, or a device already left out
  }
  r.epsilon += report.epsilon;
  r.releases += report.releases;
  r.round = round_ + 1;  // reported: waits for the next round
  if (report.code != 0) {
    Fail(r, "device reported status " + std::to_string(report.code) + " in round " + std::to_string(round));
  } else if (!r.has_upload) {
    Fail(r, "report without a histogram in round " + std::to_string(round));
  }
  return Poll(now_us);
}

bool FedWalkHistogramJob::RoundComplete() const {
  return std::none_of(devices_.begin(), devices_.end(), [this](const auto& d) {
    return d.second.state == State::kReleasing && d.second.round == round_;
  });
}

void FedWalkHistogramJob::CloseRound(uint64_t now_us) {
  for (auto& [id, r] : devices_) {
    if (r.state == State::kReleasing && r.round == round_) {
      r.state = State::kMissed;
      r.why = "missed the round " + std::to_string(round_) + " deadline";
    }
  }
  summary_.seconds_rounds.push_back(Seconds(round_started_us_, now_us));
  round_started_us_ = now_us;
  worker_done_ = false;
  progress_done_ = 0;
  progress_total_ = 0;
  if (round_ < summary_.plan.size()) {
    phase_ = Phase::kRefining;
    worker_stage_ = 0;
    worker_.Start(options_.executor, [this] { RunRefine(); });
  } else {
    phase_ = Phase::kWalking;
    worker_stage_ = 1;
    worker_.Start(options_.executor, [this] { RunWalksAndTraining(); });
  }
}

std::vector<RoundStart> FedWalkHistogramJob::Poll(uint64_t now_us) {
  switch (phase_) {
    case Phase::kReleasing: {
      const bool late = now_us - round_started_us_ > uint64_t{options_.round_deadline_ms} * 1000;
      if (RoundComplete() || late) CloseRound(now_us);
      return {};
    }
    case Phase::kRefining:
      if (!worker_done_.load()) return {};
      worker_.Wait();
      summary_.seconds_refine += Seconds(round_started_us_, now_us);
      return StartRound(now_us, std::move(next_partition_));
    case Phase::kWalking:
      if (!worker_done_.load()) return {};
      worker_.Wait();
      Finish();
      return {};
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

void FedWalkHistogramJob::RunRefine() {
  fedwalk::RefineOptions o;
  o.seed = options_.seed + round_;
  o.threads = options_.compute_threads;
  next_partition_ = fedwalk::RefinePartition(*histograms_, summary_.plan[round_].clusters, o);
  // Devices left out of the job take no part in the next partition either.
  for (const auto& [id, r] : devices_) {
    if (r.state != State::kReleasing && id < next_partition_.size()) next_partition_[id] = fw::kAbsentCluster;
  }
  worker_done_.store(true);
}

void FedWalkHistogramJob::RunWalksAndTraining() {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  std::string error;
  fedwalk::HistogramWalkStats stats;
  auto progress = [this](uint64_t done, uint64_t total) {
    progress_done_.store(done, std::memory_order_relaxed);
    progress_total_.store(total, std::memory_order_relaxed);
  };
  const std::optional<fedwalk::WalkCorpus> corpus =
      fedwalk::GenerateHistogramWalks(*histograms_, options_.walks, progress, &stats, &error);
  summary_.seconds_walks = std::chrono::duration<double>(Clock::now() - t0).count();
  summary_.walks = stats;
  if (!corpus) {
    summary_.error = "walks: " + error;
    worker_done_.store(true);
    return;
  }
  worker_stage_ = 2;
  t0 = Clock::now();
  fedwalk::SkipGramOptions skipgram = options_.skipgram;
  skipgram.epochs = fedwalk::EpochsFor(*corpus, skipgram);
  summary_.training_epochs = skipgram.epochs;
  const std::optional<fedwalk::SkipGramModel> model = fedwalk::Train(*corpus, skipgram, progress, &error);
  summary_.seconds_training = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!model) {
    summary_.error = "training: " + error;
    worker_done_.store(true);
    return;
  }
  summary_.training_tokens_per_second =
      static_cast<double>(summary_.training_epochs * corpus->num_tokens()) /
      std::max(summary_.seconds_training, 1e-9);
  if (!options_.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.output_dir, ec);
    const std::filesystem::path path = std::filesystem::path(options_.output_dir) / "embeddings.w2v";
    if (model->WriteWord2VecText(path, &error)) {
      summary_.embeddings_path = path.string();
    } else {
      summary_.error = "writing embeddings: " + error;
    }
  }
  worker_done_.store(true);
}

void FedWalkHistogramJob::Finish() {
  phase_ = Phase::kFinished;
  std::vector<double> eps;
  for (auto& [id, r] : devices_) {
    if (r.state == State::kReleasing && r.round > summary_.plan.size()) r.state = State::kDone;
    if (r.state == State::kDone) ++summary_.completed;
    if (r.state == State::kMissed) ++summary_.missed;
    if (r.state == State::kFailed) ++summary_.failed;
    if (r.epsilon > summary_.epsilon_planned * (1 + kEpsilonSlack)) ++summary_.over_plan;
    eps.push_back(r.epsilon);
  }
  if (!eps.empty()) {
    std::sort(eps.begin(), eps.end());
    summary_.epsilon_max = eps.back();
    summary_.epsilon_median =
        eps.size() % 2 == 1 ? eps[eps.size() / 2] : (eps[eps.size() / 2 - 1] + eps[eps.size() / 2]) / 2;
  }
  WriteOutputs();
}

bool FedWalkHistogramJob::succeeded() const {
  return finished() && summary_.error.empty() && summary_.completed == summary_.participants &&
         summary_.protocol_errors == 0 && summary_.over_plan == 0;
}

std::string FedWalkHistogramJob::ProgressLine() const {
  std::ostringstream o;
  switch (phase_) {
    case Phase::kReleasing: {
      const auto waiting = std::count_if(devices_.begin(), devices_.end(), [this](const auto& d) {
        return d.second.state == State::kReleasing && d.second.round == round_;
      });
      const auto uploaded = std::count_if(devices_.begin(), devices_.end(), [this](const auto& d) {
        return d.second.round == round_ && d.second.has_upload;
      });
      o << "release round " << round_ << "/" << summary_.plan.size() << " (" << summary_.plan[round_ - 1].clusters
        << " clusters, epsilon " << summary_.plan[round_ - 1].epsilon << "): " << uploaded << " uploading, "
        << waiting << " not reported";
      break;
    }
    case Phase::kRefining:
      o << "refining the partition from round " << round_ << " (spectral clustering)";
      break;
    case Phase::kWalking: {
      const uint64_t total = progress_total_.load(), done = progress_done_.load();
      o << (worker_stage_.load() == 1 ? "generating walks from the histograms " : "SkipGram training ")
        << (total ? 100 * done / total : 0) << "% of " << total << (worker_stage_.load() == 1 ? " walks" : " tokens");
      break;
    }
    default:
      o << "idle";
  }
  return o.str();
}

void FedWalkHistogramJob::LogSummary(Logger& log, uint64_t job_id) const {
  const HistogramJobSummary& s = summary_;
  std::ostringstream clusters, epsilons, rounds;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    clusters << (i ? "," : "") << s.plan[i].clusters;
    epsilons << (i ? "," : "") << s.plan[i].epsilon;
  }
  for (size_t i = 0; i < s.seconds_rounds.size(); ++i) rounds << (i ? "," : "") << s.seconds_rounds[i];
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "fedwalk-histograms"},
                            {"verified", succeeded()},
                            {"partition", fedwalk::PartitionSchemeName(options_.plan.scheme)},
                            {"releases", static_cast<uint64_t>(s.plan.size())},
                            {"clusters", clusters.str()},
                            {"release_epsilons", epsilons.str()},
                            {"participants", s.participants},
                            {"completed", s.completed},
                            {"missed", s.missed},
                            {"failed", s.failed},
                            {"walk_rule", fedwalk::HistogramWalkRuleName(options_.walks.rule)},
                            {"walks", s.walks.walks},
                            {"tokens", s.walks.tokens},
                            {"dead_ends", s.walks.dead_ends},
                            {"cluster_pairs", s.walks.cluster_pairs},
                            {"seconds_rounds", rounds.str()},
                            {"seconds_refine", s.seconds_refine},
                            {"seconds_walks", s.seconds_walks},
                            {"seconds_training", s.seconds_training},
                            {"training_epochs", s.training_epochs},
                            {"training_tokens_per_s", s.training_tokens_per_second},
                            {"upload_bytes", s.upload_bytes},
                            {"partition_bytes", s.partition_bytes},
                            {"repeated_uploads", s.repeated_uploads},
                            {"embeddings", s.embeddings_path},
                            {"error", s.error},
                            {"protocol_errors", s.protocol_errors}});
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "fedwalk-histograms"},
            {"mode", "strict"},
            {"epsilon_planned", s.epsilon_planned},
            {"device_epsilon_max", s.epsilon_max},
            {"device_epsilon_median", s.epsilon_median},
            {"epsilon_per_edge_vs_server", 2 * s.epsilon_max},
            {"devices_over_plan", s.over_plan},
            {"note", "epsilon-edge-DP per device over its releases; an edge is in both endpoints' releases, so "
                     "the server holds 2x about it; the walks are post-processing (no cost in gamma or l); no "
                     "relay traffic"}});
  size_t listed = 0;
  for (const auto& [id, r] : devices_) {
    if (r.state != State::kMissed && r.state != State::kFailed) continue;
    if (++listed > 50) break;  // the output file lists them all
    log.Warn("device_left_out", {{"job", job_id}, {"device", id}, {"round", r.round}, {"why", r.why}});
  }
}

void FedWalkHistogramJob::WriteOutputs() const {
  if (options_.output_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  const std::filesystem::path dir(options_.output_dir);
  // What the server holds from the last round: the public partition and,
  // per device, the positive cells of its noised histogram (the rest is
  // zero or negative noise, which nothing downstream uses).
  const std::vector<uint8_t> partition = fedwalk::EncodeClusterPartition(histograms_->partition());
  std::ofstream(dir / "histogram-partition.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(partition.data()), static_cast<std::streamsize>(partition.size()));
  std::ofstream uploads(dir / "histogram-uploads.tsv");
  uploads << "device\tpositive cells (cluster:count)\n";
  for (uint32_t v = 0; v < histograms_->vertex_count(); ++v) {
    if (!histograms_->present(v)) continue;
    uploads << v << '\t';
    bool first = true;
    for (const fedwalk::HistogramCell& cell : histograms_->row(v)) {
      uploads << (first ? "" : ",") << cell.cluster << ':' << cell.count;
      first = false;
    }
    uploads << '\n';
  }
  std::ofstream devices(dir / "histogram-devices.tsv");
  devices << "device\tstate\tround\tepsilon\treleases\twhy\n";
  static const char* kStates[] = {"releasing", "done", "missed", "failed"};
  for (const auto& [id, r] : devices_) {
    devices << id << '\t' << kStates[static_cast<int>(r.state)] << '\t' << r.round << '\t' << r.epsilon << '\t'
            << r.releases << '\t' << r.why << '\n';
  }
}

}  // namespace nodefl::server::jobs
