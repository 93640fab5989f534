// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The lumos-train coordinator (Lumos Sec. VI) without devices: the test
// plays four devices by hand over the contract
// (protocol/lumos/train_format.h) and checks setup (the shape, the split of
// SplitNodes), the parameters sent every epoch, the averaged Adam step
// against server/lumos/training's Adam on a copy, a straggler ended by the
// deadline, malformed gradient records dropped as protocol errors, the
// evaluation epoch, the report round and the outputs; link mode (symmetric
// partner records before the assignment, the gradient averaged over the
// loss terms, the AUC of the devices' binned scores, malformed score records
// dropping a contribution); secure sum (the codes sent, the aggregation's
// records after the parameters, an aborted aggregation updating nothing);
// also the plan's options (lumos_train=node needs the dataset's
// dimensions, link its features, lumos_secure_sum training and a clip).
#include "nodefl/server/jobs/lumos_train_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/server/jobs/job_options.h"
#include "nodefl/server/jobs/lumos_kind.h"
#include "nodefl/server/lumos/training/adam.h"
#include "nodefl/server/lumos/training/central.h"
#include "nodefl/server/lumos/training/link_task.h"
#include "nodefl/server/lumos/training/splits.h"

namespace nodefl::server::jobs {
namespace {

namespace tf = nodefl::lumos;
namespace sl = nodefl::server::lumos;

constexpr uint64_t kMs = 1000;

nodefl_wire_JobReport Report(StatusCode code = StatusCode::kOk) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_LUMOS_TRAIN;
  r.code = static_cast<uint32_t>(code);
  return r;
}

gnn::ModelShape Shape() {
  gnn::ModelShape s;
  s.features = 120;  // enough parameters for three records
  s.classes = 3;
  return s;
}

LumosTrainOptions Options2Epochs(const std::string& output_dir = {}) {
  LumosTrainOptions o;
  o.job_id = 9;
  o.shape = Shape();
  o.epochs = 2;
  o.seed = 7;
  o.split_seed = 1;
  o.round_deadline_ms = 1000;
  o.epoch_deadline_ms = 1000;
  o.output_dir = output_dir;
  return o;
}

std::vector<uint8_t> Record(uint32_t first, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(4 + 4 * values.size());
  StoreU32Le(first, bytes.data());
  for (size_t i = 0; i < values.size(); ++i) StoreF32Le(values[i], bytes.data() + 4 + 4 * i);
  return bytes;
}

std::vector<uint8_t> Metrics(uint32_t epoch, sl::Split split, bool trained, bool correct, double loss) {
  tf::TrainMetrics m;
  m.epoch = epoch;
  m.split = static_cast<uint8_t>(split);
  m.labelled = true;
  m.trained = trained;
  m.correct = correct;
  m.pool = 3;
  m.loss = loss;
  m.terms = trained ? 1 : 0;
  std::vector<uint8_t> bytes(tf::kTrainMetricsBytes);
  EXPECT_TRUE(tf::EncodeTrainMetrics(m, ByteSpan(bytes)).ok());
  return bytes;
}

// A device's whole gradient, uploaded as kTrainGradient records.
void Upload(LumosTrainJob& job, uint32_t device, uint32_t round, const std::vector<float>& g, uint64_t now) {
  for (size_t first = 0; first < g.size(); first += tf::kTrainFloatsPerRecord) {
    const size_t n = std::min(tf::kTrainFloatsPerRecord, g.size() - first);
    std::vector<float> part(g.begin() + static_cast<std::ptrdiff_t>(first),
                            g.begin() + static_cast<std::ptrdiff_t>(first + n));
    EXPECT_TRUE(job.OnUpload(device, round, tf::kTrainGradient, Record(static_cast<uint32_t>(first), part), now)
                    .empty());
  }
}

// The parameters each device was sent, reassembled; every index exactly once.
std::map<uint32_t, std::vector<float>> Params(const std::vector<DeviceData>& data, uint32_t round, size_t total) {
  std::map<uint32_t, std::vector<float>> out;
  std::map<uint32_t, std::vector<int>> seen;
  for (const DeviceData& d : data) {
    if (d.kind != tf::kTrainParams) continue;
    EXPECT_EQ(d.round, round);
    EXPECT_GE(d.bytes.size(), 8u);
    EXPECT_EQ(d.bytes.size() % 4, 0u);
    const uint32_t first = LoadU32Le(d.bytes.data());
    const size_t n = (d.bytes.size() - 4) / 4;
    EXPECT_LE(n, tf::kTrainFloatsPerRecord);
    std::vector<float>& p = out[d.device];
    std::vector<int>& s = seen[d.device];
    p.resize(total);
    s.resize(total);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_LT(first + i, total);
      if (first + i >= total) break;
      p[first + i] = LoadF32Le(d.bytes.data() + 4 + 4 * i);
      ++s[first + i];
    }
  }
  for (const auto& [id, s] : seen) {
    for (size_t i = 0; i < total; ++i) EXPECT_EQ(s[i], 1) << "device " << id << " index " << i;
  }
  return out;
}

tf::TrainParameters Decode(const RoundStart& start) {
  Result<tf::TrainParameters> p = tf::DecodeTrainParameters(ConstByteSpan(start.parameters));
  EXPECT_TRUE(p.ok());
  return p.ok() ? *p : tf::TrainParameters{};
}

std::vector<float> Gradient(size_t total, float scale) {
  std::vector<float> g(total);
  for (size_t i = 0; i < total; ++i) g[i] = scale * (static_cast<float>(i % 17) - 8.0f) / 16.0f;
  return g;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_FLOAT_EQ(got[i], want[i]) << "index " << i;
}

// A device's neighbours wait for its leaf embeddings and gradients each
// epoch: one the server gives up on is named to the devices still at work
// on the epoch, so that none waits for it until the epoch's deadline.
TEST(LumosTrainJobTest, DevicesGivenUpOnInAnEpochAreNamedToTheOthersStillAtWork) {
  LumosTrainJob job(Options2Epochs(), {1, 2, 3, 4});
  ASSERT_EQ(job.Begin(0).size(), 1u);
  (void)job.TakeData();
  std::vector<RoundStart> started;
  for (uint32_t id : {1u, 2u, 3u, 4u}) started = job.OnReport(id, 1, Report(), 10 * kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(Decode(started[0]).epoch, 1u);
  (void)job.TakeData();  // the parameters
  const auto gone_records = [&job] {
    std::map<uint32_t, std::vector<uint32_t>> named;  // device -> ids named to it
    for (const DeviceData& d : job.TakeData()) {
      if (d.kind != tf::kTrainPeersGone) continue;
      EXPECT_EQ(d.bytes.size() % 4, 0u);
      EXPECT_GE(d.bytes.size(), 8u);
      if (d.bytes.size() < 8) continue;
      EXPECT_EQ(LoadU32Le(d.bytes.data()), 1u) << "the epoch";
      for (size_t at = 4; at < d.bytes.size(); at += 4) named[d.device].push_back(LoadU32Le(d.bytes.data() + at));
    }
    return named;
  };
  EXPECT_TRUE(job.Poll(20 * kMs).empty());
  EXPECT_TRUE(gone_records().empty()) << "nobody gone, nothing said";
  job.OnUndeliverable(4, 30 * kMs);
  job.OnUndeliverable(3, 31 * kMs);
  job.OnUndeliverable(3, 32 * kMs);  // told twice: named once
  EXPECT_TRUE(job.Poll(40 * kMs).empty());
  std::map<uint32_t, std::vector<uint32_t>> named = gone_records();
  EXPECT_EQ(named, (std::map<uint32_t, std::vector<uint32_t>>{{1, {3, 4}}, {2, {3, 4}}}));
  for (const DeviceData& d : job.TakeData()) ADD_FAILURE() << "more data for device " << d.device;
  // Later: only what is new, and only to who is still at work.
  job.OnUndeliverable(1, 50 * kMs);
  EXPECT_TRUE(job.Poll(60 * kMs).empty());
  named = gone_records();
  EXPECT_EQ(named, (std::map<uint32_t, std::vector<uint32_t>>{{2, {1}}}));
  EXPECT_EQ(job.summary().gone, 3u);
}

TEST(LumosTrainJobTest, RunsEpochsAveragesGradientsAndCountsStragglersAndBadRecords) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "nodefl-lumos-train-job-test";
  std::filesystem::remove_all(out);
  const std::vector<uint32_t> ids = {3, 7, 10, 12};
  LumosTrainJob job(Options2Epochs(out.string()), {12, 3, 10, 7});
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(Shape());
  ASSERT_TRUE(layout.ok());
  const size_t total = layout->total;
  ASSERT_GT(total, 2 * tf::kTrainFloatsPerRecord);

  // Setup.
  std::vector<RoundStart> started = job.Begin(0);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].round, 1u);
  EXPECT_EQ(started[0].devices, ids);
  const tf::TrainParameters setup = Decode(started[0]);
  EXPECT_EQ(setup.phase, tf::TrainPhase::kSetup);
  EXPECT_EQ(setup.parameters, total);
  EXPECT_EQ(setup.features, 120u);
  EXPECT_EQ(setup.classes, 3u);
  EXPECT_EQ(setup.layer, 1u);
  EXPECT_FALSE(setup.paper);
  EXPECT_FLOAT_EQ(setup.label_epsilon, 2.0f);
  EXPECT_EQ(job.layout().total, total);
  const std::vector<sl::Split> split = sl::SplitNodes(4, 1);
  std::map<uint32_t, sl::Split> split_of;
  std::vector<DeviceData> data = job.TakeData();
  ASSERT_EQ(data.size(), 4u);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(data[i].device, ids[i]);
    EXPECT_EQ(data[i].kind, tf::kTrainAssignment);
    EXPECT_EQ(data[i].round, 1u);
    ASSERT_EQ(data[i].bytes.size(), 1u);
    EXPECT_EQ(data[i].bytes[0], static_cast<uint8_t>(split[i]));
    split_of[ids[i]] = split[i];
  }
  // Name the devices by split: two training nodes, one validation, one test.
  std::vector<uint32_t> trainers;
  uint32_t validator = 0, tester = 0;
  for (uint32_t id : ids) {
    if (split_of[id] == sl::Split::kTrain) trainers.push_back(id);
    if (split_of[id] == sl::Split::kValidation) validator = id;
    if (split_of[id] == sl::Split::kTest) tester = id;
  }
  ASSERT_EQ(trainers.size(), 2u);
  ASSERT_NE(validator, 0u);
  ASSERT_NE(tester, 0u);

  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_TRUE(job.OnReport(ids[i], 1, Report(), 10 * kMs).empty());
  started = job.OnReport(ids.back(), 1, Report(), 10 * kMs);

  // Epoch 1: the initial parameters to everyone.
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].round, 2u);
  EXPECT_EQ(started[0].devices, ids);
  tf::TrainParameters p = Decode(started[0]);
  EXPECT_EQ(p.phase, tf::TrainPhase::kEpoch);
  EXPECT_EQ(p.epoch, 1u);
  EXPECT_TRUE(p.train);
  // One salt for the whole job.
  EXPECT_EQ(std::vector<uint8_t>(p.salt, p.salt + 16), std::vector<uint8_t>(setup.salt, setup.salt + 16));
  std::vector<float> expected = sl::InitialParameters(*layout, 7);
  {
    const auto sent = Params(job.TakeData(), 2, total);
    ASSERT_EQ(sent.size(), 4u);
    for (const auto& [id, values] : sent) EXPECT_EQ(values, expected) << "device " << id;
  }
  sl::Adam adam(total, sl::AdamOptions{});

  // The two training nodes and the validation node upload; the test node
  // straggles.
  const std::vector<float> ga = Gradient(total, 1.0f), gb = Gradient(total, -0.25f), gc = Gradient(total, 0.5f);
  Upload(job, trainers[0], 2, ga, 20 * kMs);
  EXPECT_TRUE(job.OnUpload(trainers[0], 2, tf::kTrainMetrics, Metrics(1, sl::Split::kTrain, true, true, 1.0), 21 * kMs)
                  .empty());
  Upload(job, trainers[1], 2, gb, 22 * kMs);
  EXPECT_TRUE(
      job.OnUpload(trainers[1], 2, tf::kTrainMetrics, Metrics(1, sl::Split::kTrain, true, false, 2.0), 23 * kMs)
          .empty());
  Upload(job, validator, 2, gc, 24 * kMs);
  EXPECT_TRUE(
      job.OnUpload(validator, 2, tf::kTrainMetrics, Metrics(1, sl::Split::kValidation, false, true, 0.5), 25 * kMs)
          .empty());
  for (uint32_t id : {trainers[0], trainers[1], validator}) EXPECT_TRUE(job.OnReport(id, 2, Report(), 26 * kMs).empty());
  EXPECT_TRUE(job.Poll(500 * kMs).empty());
  EXPECT_EQ(job.parameters(), expected);  // nothing before the epoch ends
  started = job.Poll(1100 * kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].round, 3u);
  EXPECT_EQ(started[0].devices, ids);  // the straggler is asked again
  {
    std::vector<float> mean(total);
    for (size_t i = 0; i < total; ++i) mean[i] = (ga[i] + gb[i] + gc[i]) / 2.0f;
    ASSERT_TRUE(adam.Step(std::span<float>(expected), std::span<const float>(mean)));
    ExpectNear(job.parameters(), expected);
  }
  ASSERT_EQ(job.epochs().size(), 1u);
  {
    const LumosTrainEpoch& e = job.epochs()[0];
    EXPECT_TRUE(e.train);
    EXPECT_TRUE(e.updated);
    EXPECT_TRUE(e.deadline);
    EXPECT_EQ(e.devices, 4u);
    EXPECT_EQ(e.done, 3u);
    EXPECT_EQ(e.stragglers, 1u);
    EXPECT_EQ(e.trained, 2u);
    EXPECT_DOUBLE_EQ(e.loss, 1.5);
    EXPECT_DOUBLE_EQ(e.accuracy[0], 0.5);
    EXPECT_DOUBLE_EQ(e.accuracy[1], 1.0);
    EXPECT_DOUBLE_EQ(e.accuracy[2], 0.0);
    EXPECT_DOUBLE_EQ(e.validation_loss, 0.5);
    EXPECT_EQ(e.bytes_up, 4 * total + 4 * 3);  // three records per device
    EXPECT_EQ(e.bytes_down, 4 * total + 4 * 3);
  }

  // Epoch 2: the new parameters; a record past the end and a NaN spoil two
  // contributions; the rest average over the one loss left.
  {
    const auto sent = Params(job.TakeData(), 3, total);
    ASSERT_EQ(sent.size(), 4u);
    for (const auto& [id, values] : sent) EXPECT_EQ(values, job.parameters()) << "device " << id;
  }
  EXPECT_EQ(Decode(started[0]).epoch, 2u);
  // A metrics record of the old epoch is stale, not an error.
  EXPECT_TRUE(job.OnUpload(tester, 2, tf::kTrainMetrics, Metrics(1, sl::Split::kTest, false, true, 0.1), 1200 * kMs)
                  .empty());
  EXPECT_EQ(job.summary().protocol_errors, 0u);
  Upload(job, trainers[0], 3, ga, 1200 * kMs);
  EXPECT_TRUE(job.OnUpload(trainers[0], 3, tf::kTrainGradient,
                           Record(static_cast<uint32_t>(total - 10), std::vector<float>(20, 1.0f)), 1201 * kMs)
                  .empty());
  EXPECT_EQ(job.summary().protocol_errors, 1u);
  EXPECT_TRUE(job.OnUpload(trainers[0], 3, tf::kTrainMetrics, Metrics(2, sl::Split::kTrain, true, true, 0.8), 1202 * kMs)
                  .empty());
  std::vector<float> bad = Gradient(total, 0.5f);
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  Upload(job, validator, 3, bad, 1203 * kMs);
  EXPECT_EQ(job.summary().protocol_errors, 2u);
  EXPECT_TRUE(
      job.OnUpload(validator, 3, tf::kTrainMetrics, Metrics(2, sl::Split::kValidation, false, false, 0.7), 1204 * kMs)
          .empty());
  Upload(job, trainers[1], 3, gb, 1205 * kMs);
  EXPECT_TRUE(job.OnUpload(trainers[1], 3, tf::kTrainMetrics, Metrics(2, sl::Split::kTrain, true, true, 0.6), 1206 * kMs)
                  .empty());
  // The test node: no gradient (its tree had nothing to send), metrics only.
  started = job.OnUpload(tester, 3, tf::kTrainMetrics, Metrics(2, sl::Split::kTest, false, true, 0.4), 1207 * kMs);
  ASSERT_EQ(started.size(), 1u);  // everyone done: no deadline needed
  EXPECT_EQ(started[0].round, 4u);
  ASSERT_TRUE(adam.Step(std::span<float>(expected), std::span<const float>(gb)));
  ExpectNear(job.parameters(), expected);
  ASSERT_EQ(job.epochs().size(), 2u);
  {
    const LumosTrainEpoch& e = job.epochs()[1];
    EXPECT_TRUE(e.updated);
    EXPECT_FALSE(e.deadline);
    EXPECT_EQ(e.done, 4u);
    EXPECT_EQ(e.stragglers, 0u);
    EXPECT_EQ(e.trained, 1u);
    EXPECT_EQ(e.discarded, 2u);
    EXPECT_DOUBLE_EQ(e.loss, 0.6);
    EXPECT_DOUBLE_EQ(e.accuracy[2], 1.0);
  }
  EXPECT_EQ(job.summary().protocol_errors, 2u);
  EXPECT_EQ(job.summary().discarded, 2u);

  // The evaluation epoch: no update, zero or absent gradients both fine.
  const tf::TrainParameters eval = Decode(started[0]);
  EXPECT_EQ(eval.epoch, 3u);
  EXPECT_FALSE(eval.train);
  (void)job.TakeData();
  Upload(job, trainers[0], 4, std::vector<float>(total, 0.0f), 1300 * kMs);
  EXPECT_TRUE(job.OnUpload(trainers[0], 4, tf::kTrainMetrics, Metrics(3, sl::Split::kTrain, false, true, 0.3), 1301 * kMs)
                  .empty());
  EXPECT_TRUE(
      job.OnUpload(trainers[1], 4, tf::kTrainMetrics, Metrics(3, sl::Split::kTrain, false, true, 0.5), 1302 * kMs)
          .empty());
  EXPECT_TRUE(
      job.OnUpload(validator, 4, tf::kTrainMetrics, Metrics(3, sl::Split::kValidation, false, true, 0.2), 1303 * kMs)
          .empty());
  started = job.OnUpload(tester, 4, tf::kTrainMetrics, Metrics(3, sl::Split::kTest, false, false, 0.9), 1304 * kMs);
  ASSERT_EQ(started.size(), 1u);
  ExpectNear(job.parameters(), expected);
  ASSERT_EQ(job.epochs().size(), 3u);
  EXPECT_FALSE(job.epochs()[2].train);
  EXPECT_FALSE(job.epochs()[2].updated);
  EXPECT_DOUBLE_EQ(job.epochs()[2].loss, 0.4);  // the training nodes' mean loss

  // Report round.
  EXPECT_EQ(started[0].round, 5u);
  EXPECT_EQ(Decode(started[0]).phase, tf::TrainPhase::kReport);
  EXPECT_EQ(started[0].devices, ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    tf::TrainSummary s;
    s.workload = 2;
    s.epochs = 2;
    s.epsilon_all_receivers = 1.0 + static_cast<double>(i);
    s.epsilon_per_receiver = 0.5 + static_cast<double>(i);
    std::vector<uint8_t> bytes(tf::kTrainSummaryBytes);
    ASSERT_TRUE(tf::EncodeTrainSummary(s, ByteSpan(bytes)).ok());
    EXPECT_TRUE(job.OnUpload(ids[i], 5, tf::kTrainSummary, bytes, 1400 * kMs).empty());
    EXPECT_FALSE(job.finished());
    EXPECT_TRUE(job.OnReport(ids[i], 5, Report(), 1401 * kMs).empty());
  }
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.succeeded()) << job.summary().error;
  const LumosTrainSummary& s = job.summary();
  EXPECT_EQ(s.ready, 4u);
  EXPECT_EQ(s.epochs_updated, 2u);
  EXPECT_EQ(s.stragglers, 1u);
  EXPECT_EQ(s.summaries, 4u);
  EXPECT_DOUBLE_EQ(s.epsilon_all_receivers, 4.0);
  EXPECT_DOUBLE_EQ(s.epsilon_per_receiver, 3.5);
  EXPECT_DOUBLE_EQ(s.final_accuracy[0], 1.0);
  EXPECT_DOUBLE_EQ(s.final_accuracy[1], 1.0);
  EXPECT_DOUBLE_EQ(s.final_accuracy[2], 0.0);
  EXPECT_EQ(s.best_epoch, 1u);  // validation 1.0 first reached in epoch 1
  EXPECT_DOUBLE_EQ(s.test_at_best, 0.0);
  EXPECT_TRUE(s.missed_report.empty());

  // Outputs: one line per epoch and the final parameters.
  std::ifstream epochs(out / "lumos-train-epochs.tsv");
  size_t lines = 0;
  for (std::string line; std::getline(epochs, line);) ++lines;
  EXPECT_EQ(lines, 4u);
  EXPECT_EQ(std::filesystem::file_size(out / "lumos-train-parameters.bin"), 4 * total);
  std::filesystem::remove_all(out);
}

TEST(LumosTrainJobTest, RefusedSetupLeavesTheDeviceOutAndUnreachableDevicesStraggle) {
  LumosTrainOptions o = Options2Epochs();
  o.epochs = 1;
  LumosTrainJob job(o, {1, 2, 3});
  ASSERT_EQ(job.Begin(0).size(), 1u);
  (void)job.TakeData();
  EXPECT_TRUE(job.OnReport(1, 1, Report(StatusCode::kFailedPrecondition), kMs).empty());
  EXPECT_TRUE(job.OnReport(2, 1, Report(), kMs).empty());
  // Device 3 never answers: the deadline ends setup.
  std::vector<RoundStart> started = job.Poll(1001 * kMs + kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].devices, std::vector<uint32_t>{2});
  EXPECT_EQ(job.summary().refused, std::vector<uint32_t>{1});
  EXPECT_EQ(job.summary().missed_setup, std::vector<uint32_t>{3});
  // Device 2 is unreachable: the epoch ends at once, nothing to update.
  job.OnUndeliverable(2, 1100 * kMs);
  started = job.Poll(1100 * kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_FALSE(Decode(started[0]).train);  // the evaluation epoch asks device 2 again
  EXPECT_EQ(started[0].devices, std::vector<uint32_t>{2});
  ASSERT_EQ(job.epochs().size(), 1u);
  EXPECT_EQ(job.epochs()[0].stragglers, 1u);
  EXPECT_FALSE(job.epochs()[0].updated);
  started = job.Poll(2200 * kMs);  // evaluation deadline
  ASSERT_EQ(started.size(), 1u);
  EXPECT_TRUE(job.Poll(3300 * kMs).empty());  // report deadline
  EXPECT_TRUE(job.finished());
  EXPECT_FALSE(job.succeeded());  // no epoch updated
  EXPECT_EQ(job.summary().missed_report, std::vector<uint32_t>{2});
}

TEST(LumosTrainJobTest, ABadShapeFinishesWithAnError) {
  LumosTrainOptions o = Options2Epochs();
  o.shape.layer = gnn::LayerKind::kGat;
  o.shape.hidden = 15;  // not divisible by 4 heads
  LumosTrainJob job(o, {1, 2});
  EXPECT_TRUE(job.Begin(0).empty());
  EXPECT_TRUE(job.finished());
  EXPECT_FALSE(job.succeeded());
  EXPECT_FALSE(job.summary().error.empty());
}

// A valid server configuration of the lumos-trees plan (training off).
ServerConfig LumosTreesConfig() {
  ServerConfig config = DefaultServerConfigWithJobs();
  config.tls_ca_cert = "ca.crt";
  config.tls_server_cert = "server.crt";
  config.tls_server_key = "server.key";
  config.credentials_dir = "creds";
  config.job = "lumos-trees";
  return config;
}

// With a projection the devices are told its width and seed, and the
// model's first layer is sized for the projection, not the features.
TEST(LumosTrainJobTest, AProjectionSizesTheModelAndReachesTheDevices) {
  LumosTrainOptions o = Options2Epochs();
  const size_t unprojected = gnn::LayoutOf(o.shape)->total;
  o.projection = 3;
  o.projection_seed = 0xABCDEF;
  LumosTrainJob job(o, {1, 2});
  std::vector<RoundStart> started = job.Begin(0);
  ASSERT_EQ(started.size(), 1u);
  const tf::TrainParameters p = Decode(started[0]);
  EXPECT_EQ(p.features, o.shape.features);
  EXPECT_EQ(p.projection, 3);
  EXPECT_EQ(p.projection_seed, 0xABCDEFu);
  gnn::ModelShape projected = o.shape;
  projected.features = 3;
  EXPECT_EQ(job.layout().total, gnn::LayoutOf(projected)->total);
  EXPECT_EQ(p.parameters, job.layout().total);
  EXPECT_NE(job.layout().total, unprojected);
}

TEST(LumosTrainPlan, TrainingIsAnOptionalThirdStageThatNeedsTheDatasetsDimensions) {
  ServerConfig config = LumosTreesConfig();
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-trim"}));
  ASSERT_TRUE(SetConfigValue(config, "lumos_train", "node").ok);
  ConfigStatus status = ValidateConfig(config);
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("lumos_features: required with lumos_train=node"), std::string::npos)
      << status.message;
  ASSERT_TRUE(SetConfigValue(config, "lumos_features", "1433").ok);
  status = ValidateConfig(config);
  EXPECT_NE(status.message.find("lumos_classes: required with lumos_train=node"), std::string::npos)
      << status.message;
  ASSERT_TRUE(SetConfigValue(config, "lumos_classes", "7").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-trim", "lumos-train"}));
  Options<LumosJobConfig>(config).model = "sage";
  EXPECT_NE(ValidateConfig(config).message.find("lumos_model: 'sage' is not gcn or gat"), std::string::npos);
  Options<LumosJobConfig>(config).model = "gat";
  Options<LumosJobConfig>(config).epsilon = 0;
  EXPECT_NE(ValidateConfig(config).message.find("lumos_epsilon"), std::string::npos);
  Options<LumosJobConfig>(config).epsilon = 2;
  Options<LumosJobConfig>(config).train = "graph";
  EXPECT_NE(ValidateConfig(config).message.find("lumos_train: 'graph' is not off, node or link"), std::string::npos);
  Options<LumosJobConfig>(config).train = "node";
  Options<LumosJobConfig>(config).privacy = "paper";
  Options<LumosJobConfig>(config).method = "mcmc";
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-mcmc", "lumos-train"}));
  // Without a finished trimming stage there is nothing to train on.
  EXPECT_EQ(MakeJob(config, "lumos-train", 3, {1, 2}, nullptr), nullptr);
  Options<LumosJobConfig>(config).projection = 70000;
  EXPECT_NE(ValidateConfig(config).message.find("lumos_projection: at most 65535"), std::string::npos);
  Options<LumosJobConfig>(config).projection = 256;
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
}

// Link mode ---------------------------------------------------------------

LumosTrainOptions LinkOptions(uint32_t epochs, const std::string& output_dir = {}) {
  LumosTrainOptions o = Options2Epochs(output_dir);
  o.epochs = epochs;
  o.shape.classes = 0;
  o.task = tf::TrainTask::kLink;
  o.negatives = 2;
  o.eval_negatives = 1;
  o.edge_seed = 5;
  o.split_seed = 3;
  return o;
}

std::vector<uint8_t> LinkMetrics(uint32_t epoch, bool trained, uint32_t terms, double loss) {
  tf::TrainMetrics m;
  m.epoch = epoch;
  m.trained = trained;
  m.terms = terms;
  m.pool = 2;
  m.loss = loss;
  std::vector<uint8_t> bytes(tf::kTrainMetricsBytes);
  EXPECT_TRUE(tf::EncodeTrainMetrics(m, ByteSpan(bytes)).ok());
  return bytes;
}

// A kTrainLinkScores record: epoch | (kind, bin) entries.
std::vector<uint8_t> Scores(uint32_t epoch, const std::vector<std::pair<uint8_t, uint8_t>>& entries) {
  std::vector<uint8_t> bytes(4);
  StoreU32Le(epoch, bytes.data());
  for (const auto& [kind, bin] : entries) {
    bytes.push_back(kind);
    bytes.push_back(bin);
  }
  return bytes;
}

// Per device, the partners its kTrainPartners records carry; checks that
// every device's records precede its one assignment record (byte 0).
std::map<uint32_t, std::vector<sl::Partner>> PartnersSent(const std::vector<DeviceData>& data) {
  std::map<uint32_t, std::vector<sl::Partner>> out;
  std::map<uint32_t, int> assignments;
  for (const DeviceData& d : data) {
    EXPECT_EQ(d.round, 1u);
    if (d.kind == tf::kTrainAssignment) {
      EXPECT_EQ(d.bytes, std::vector<uint8_t>{0});
      ++assignments[d.device];
      continue;
    }
    EXPECT_EQ(d.kind, tf::kTrainPartners);
    EXPECT_EQ(assignments[d.device], 0) << "partners after the assignment of device " << d.device;
    EXPECT_EQ(d.bytes.size() % 5, 0u);
    EXPECT_GT(d.bytes.size(), 0u);
    EXPECT_LE(d.bytes.size() / 5, tf::kTrainPartnersPerRecord);
    for (size_t k = 0; k + 5 <= d.bytes.size(); k += 5) {
      EXPECT_LE(d.bytes[k + 4], 1u);
      out[d.device].push_back(sl::Partner{LoadU32Le(d.bytes.data() + k), static_cast<sl::PartnerUse>(d.bytes[k + 4])});
    }
    out[d.device];
  }
  for (const auto& [id, n] : assignments) EXPECT_EQ(n, 1) << "device " << id;
  return out;
}

TEST(LumosTrainJobLinkTest, SetupSendsSymmetricPartnersBeforeTheAssignment) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 7; ++i) ids.push_back(2 * i + 2);
  LumosTrainJob job(LinkOptions(1), {14, 2, 4, 6, 8, 10, 12});
  std::vector<RoundStart> started = job.Begin(0);
  ASSERT_EQ(started.size(), 1u) << job.summary().error;
  const tf::TrainParameters p = Decode(started[0]);
  EXPECT_EQ(p.task, tf::TrainTask::kLink);
  EXPECT_EQ(p.classes, 0u);
  EXPECT_EQ(p.negatives, 2u);
  EXPECT_EQ(p.eval_negatives, 1u);
  EXPECT_EQ(p.edge_seed, 5u);
  Result<gnn::ParamLayout> layout = gnn::LayoutOf(LinkOptions(1).shape);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(p.parameters, layout->total);
  EXPECT_EQ(layout->classifier_w.size(), 0u);
  const std::map<uint32_t, std::vector<sl::Partner>> sent = PartnersSent(job.TakeData());
  // The draw of LinkPartners over the ascending ids with the split seed.
  const std::vector<std::vector<sl::Partner>> want = sl::LinkPartners(ids, 2, 1, 3);
  uint64_t pairs[2] = {0, 0};
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = sent.find(ids[i]);
    const std::vector<sl::Partner> got = it == sent.end() ? std::vector<sl::Partner>{} : it->second;
    EXPECT_EQ(got, want[i]) << "device " << ids[i];
    for (const sl::Partner& q : got) {
      EXPECT_NE(q.id, ids[i]);
      auto back = sent.find(q.id);
      ASSERT_NE(back, sent.end());
      EXPECT_NE(std::find(back->second.begin(), back->second.end(), sl::Partner{ids[i], q.use}), back->second.end())
          << ids[i] << " - " << q.id;
      if (q.id > ids[i]) ++pairs[static_cast<int>(q.use)];
    }
  }
  EXPECT_EQ(job.summary().partner_pairs[0], pairs[0]);
  EXPECT_EQ(job.summary().partner_pairs[1], pairs[1]);
  EXPECT_GT(pairs[0], 4u);  // two matchings of three pairs, duplicates dropped

  // The link task has no classifier.
  LumosTrainOptions classes = LinkOptions(1);
  classes.shape.classes = 3;
  LumosTrainJob refused(classes, {1, 2});
  EXPECT_TRUE(refused.Begin(0).empty());
  EXPECT_NE(refused.summary().error.find("classes must be 0"), std::string::npos);
}

TEST(LumosTrainJobLinkTest, AveragesOverLossTermsRanksScoresAndDropsMalformedScoreRecords) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "nodefl-lumos-train-job-link-test";
  std::filesystem::remove_all(out);
  const std::vector<uint32_t> ids = {1, 2, 3, 4};
  LumosTrainJob job(LinkOptions(2, out.string()), ids);
  ASSERT_EQ(job.Begin(0).size(), 1u);
  (void)job.TakeData();
  std::vector<RoundStart> started;
  for (uint32_t id : ids) started = job.OnReport(id, 1, Report(), kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].round, 2u);
  const size_t total = job.layout().total;
  std::vector<float> expected = sl::InitialParameters(job.layout(), 7);
  EXPECT_EQ(job.parameters(), expected);
  (void)job.TakeData();
  sl::Adam adam(total, sl::AdamOptions{});
  const std::vector<float> ga = Gradient(total, 1.0f), gb = Gradient(total, -0.25f), gc = Gradient(total, 0.5f),
                           gd = Gradient(total, 2.0f);
  constexpr uint8_t kV = tf::kScoreValidationEdge, kT = tf::kScoreTestEdge, kN = tf::kScoreNegative;

  // Epoch 1: devices 1 and 2 count; device 3 sends a score of an unknown
  // kind, device 4 a record of odd length: both contributions dropped.
  Upload(job, 1, 2, ga, 2 * kMs);
  EXPECT_TRUE(job.OnUpload(1, 2, tf::kTrainLinkScores, Scores(1, {{kV, 200}, {kN, 50}}), 2 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(1, 2, tf::kTrainMetrics, LinkMetrics(1, true, 5, 3.0), 2 * kMs).empty());
  Upload(job, 2, 2, gb, 3 * kMs);
  EXPECT_TRUE(job.OnUpload(2, 2, tf::kTrainLinkScores, Scores(1, {{kT, 180}, {kN, 60}}), 3 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(2, 2, tf::kTrainLinkScores, Scores(1, {{kN, 190}}), 3 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(2, 2, tf::kTrainMetrics, LinkMetrics(1, true, 3, 1.5), 3 * kMs).empty());
  Upload(job, 3, 2, gc, 4 * kMs);
  EXPECT_TRUE(job.OnUpload(3, 2, tf::kTrainLinkScores, Scores(1, {{kV, 10}, {4, 10}}), 4 * kMs).empty());
  EXPECT_EQ(job.summary().protocol_errors, 1u);
  EXPECT_TRUE(job.OnUpload(3, 2, tf::kTrainMetrics, LinkMetrics(1, true, 7, 2.0), 4 * kMs).empty());
  Upload(job, 4, 2, gd, 5 * kMs);
  std::vector<uint8_t> odd = Scores(1, {{kN, 0}});
  odd.push_back(kV);
  EXPECT_TRUE(job.OnUpload(4, 2, tf::kTrainLinkScores, odd, 5 * kMs).empty());
  EXPECT_EQ(job.summary().protocol_errors, 2u);
  started = job.OnUpload(4, 2, tf::kTrainMetrics, LinkMetrics(1, true, 9, 4.0), 5 * kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].round, 3u);
  {
    // The mean over the five and three terms of the two devices counted.
    std::vector<float> mean(total);
    for (size_t i = 0; i < total; ++i) mean[i] = (ga[i] + gb[i]) * (1.0f / 8.0f);
    ASSERT_TRUE(adam.Step(std::span<float>(expected), std::span<const float>(mean)));
    ExpectNear(job.parameters(), expected);
    const LumosTrainEpoch& e = job.epochs().at(0);
    EXPECT_TRUE(e.updated);
    EXPECT_EQ(e.trained, 2u);
    EXPECT_EQ(e.terms, 8u);
    EXPECT_EQ(e.discarded, 2u);
    EXPECT_DOUBLE_EQ(e.loss, 4.5 / 8);
    sl::ScoreHistogram v{}, t{}, n{};
    v[200] = 1;
    t[180] = 1;
    n[50] = n[60] = n[190] = 1;
    EXPECT_DOUBLE_EQ(e.auc[1], sl::BinnedAuc(v, n));
    EXPECT_DOUBLE_EQ(e.auc[1], 1.0);
    EXPECT_DOUBLE_EQ(e.auc[2], sl::BinnedAuc(t, n));
    EXPECT_DOUBLE_EQ(e.auc[2], 2.0 / 3.0);
    EXPECT_EQ(e.positives[1], 1u);
    EXPECT_EQ(e.positives[2], 1u);
    EXPECT_EQ(e.negatives, 3u);
  }
  (void)job.TakeData();

  // Epoch 2: device 1's record names the wrong epoch, device 2's has one
  // entry too many; device 3 counts with two records, device 4 took no loss
  // (no terms) and sends scores only. No test edge: its AUC is undefined.
  Upload(job, 1, 3, ga, 10 * kMs);
  EXPECT_TRUE(job.OnUpload(1, 3, tf::kTrainLinkScores, Scores(1, {{kV, 100}}), 10 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(1, 3, tf::kTrainMetrics, LinkMetrics(2, true, 5, 3.0), 10 * kMs).empty());
  Upload(job, 2, 3, gb, 11 * kMs);
  const std::vector<std::pair<uint8_t, uint8_t>> flood(tf::kTrainScoresPerRecord + 1, {kN, 1});
  EXPECT_TRUE(job.OnUpload(2, 3, tf::kTrainLinkScores, Scores(2, flood), 11 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(2, 3, tf::kTrainMetrics, LinkMetrics(2, true, 3, 1.5), 11 * kMs).empty());
  EXPECT_EQ(job.summary().protocol_errors, 4u);
  Upload(job, 3, 3, gc, 12 * kMs);
  EXPECT_TRUE(job.OnUpload(3, 3, tf::kTrainLinkScores, Scores(2, {{kV, 120}, {kN, 130}}), 12 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(3, 3, tf::kTrainLinkScores, Scores(2, {{kV, 140}, {kV, 125}}), 12 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(3, 3, tf::kTrainMetrics, LinkMetrics(2, true, 4, 2.0), 12 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(4, 3, tf::kTrainLinkScores, Scores(2, {{kN, 120}}), 13 * kMs).empty());
  started = job.OnUpload(4, 3, tf::kTrainMetrics, LinkMetrics(2, false, 0, 0.0), 13 * kMs);
  ASSERT_EQ(started.size(), 1u);
  {
    std::vector<float> mean(total);
    for (size_t i = 0; i < total; ++i) mean[i] = gc[i] * 0.25f;
    ASSERT_TRUE(adam.Step(std::span<float>(expected), std::span<const float>(mean)));
    ExpectNear(job.parameters(), expected);
    const LumosTrainEpoch& e = job.epochs().at(1);
    EXPECT_EQ(e.trained, 1u);
    EXPECT_EQ(e.terms, 4u);
    EXPECT_EQ(e.discarded, 2u);
    EXPECT_DOUBLE_EQ(e.loss, 0.5);
    sl::ScoreHistogram v{}, n{};
    v[120] = v[140] = v[125] = 1;
    n[130] = n[120] = 1;
    EXPECT_DOUBLE_EQ(e.auc[1], sl::BinnedAuc(v, n));
    EXPECT_DOUBLE_EQ(e.auc[1], 3.5 / 6.0);  // 140 beats both, 125 one, 120 ties one
    EXPECT_TRUE(std::isnan(e.auc[2]));
  }
  (void)job.TakeData();

  // The evaluation epoch: no update; its AUCs are the final ones, its loss
  // the devices' reported sums over their terms.
  EXPECT_FALSE(Decode(started[0]).train);
  EXPECT_TRUE(job.OnUpload(1, 4, tf::kTrainLinkScores, Scores(3, {{kV, 90}, {kT, 95}, {kN, 80}}), 20 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(1, 4, tf::kTrainMetrics, LinkMetrics(3, false, 4, 1.0), 20 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(2, 4, tf::kTrainLinkScores, Scores(3, {{kT, 70}, {kN, 100}}), 21 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(2, 4, tf::kTrainMetrics, LinkMetrics(3, false, 6, 2.0), 21 * kMs).empty());
  EXPECT_TRUE(job.OnUpload(3, 4, tf::kTrainMetrics, LinkMetrics(3, false, 0, 0.0), 22 * kMs).empty());
  // A loss taken in the evaluation epoch is a protocol error.
  started = job.OnUpload(4, 4, tf::kTrainMetrics, LinkMetrics(3, true, 2, 1.0), 23 * kMs);
  ASSERT_EQ(started.size(), 1u);
  ExpectNear(job.parameters(), expected);
  {
    const LumosTrainEpoch& e = job.epochs().at(2);
    EXPECT_FALSE(e.train);
    EXPECT_FALSE(e.updated);
    EXPECT_EQ(e.discarded, 1u);
    EXPECT_DOUBLE_EQ(e.loss, 3.0 / 10.0);
    EXPECT_DOUBLE_EQ(e.auc[1], 0.5);   // 90 against 80 and 100
    EXPECT_DOUBLE_EQ(e.auc[2], 0.25);  // 95 and 70 against 80 and 100
  }
  const LumosTrainSummary& s = job.summary();
  EXPECT_DOUBLE_EQ(s.final_auc[1], job.epochs()[2].auc[1]);
  EXPECT_DOUBLE_EQ(s.final_auc[2], job.epochs()[2].auc[2]);
  EXPECT_EQ(s.best_epoch, 1u);  // validation AUC 1.0 first
  EXPECT_DOUBLE_EQ(s.best_validation, 1.0);
  EXPECT_DOUBLE_EQ(s.test_at_best, 2.0 / 3.0);
  for (uint32_t id : ids) EXPECT_TRUE(job.OnReport(id, 5, Report(), 30 * kMs).empty());
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.succeeded()) << job.summary().error;

  // The curve names its link columns.
  std::ifstream epochs(out / "lumos-train-epochs.tsv");
  std::string header, line;
  ASSERT_TRUE(std::getline(epochs, header));
  EXPECT_EQ(header,
            "epoch\ttrain\tloss\tterms\tvalidation_auc\ttest_auc\tvalidation_edges\ttest_edges\tnegatives\tdevices_done"
            "\tstragglers\tbytes_down\tbytes_up\tseconds");
  ASSERT_TRUE(std::getline(epochs, line));
  EXPECT_EQ(line.rfind("1\t1\t0.5625\t8\t1\t0.666667\t1\t1\t3\t4\t0\t", 0), 0u) << line;
  std::filesystem::remove_all(out);
}

// Secure sum: the codes reach the devices (the largest power-of-two scale
// whose n codes cannot wrap), each training epoch's aggregation records
// follow the parameters on every device's stream in the epoch's round, a
// plain gradient record is a protocol error, and an aggregation that
// aborts (every device unreachable) leaves the epoch without an update.
TEST(LumosTrainJobTest, SecureSumSendsTheAggregationAfterTheParametersAndAnAbortSkipsTheUpdate) {
  LumosTrainOptions o = Options2Epochs();
  o.epochs = 1;
  o.secure_sum = true;
  o.secure_clip = 16.0f;
  const std::vector<uint32_t> ids = {3, 7, 10, 12};
  LumosTrainJob job(o, ids);
  std::vector<RoundStart> started = job.Begin(0);
  ASSERT_EQ(started.size(), 1u);
  const tf::TrainParameters setup = Decode(started[0]);
  EXPECT_TRUE(setup.secure_sum);
  EXPECT_FLOAT_EQ(setup.secure_clip, 16.0f);
  // 4 * 16 * 2^24 = 2^30 < 2^31 <= 4 * 16 * 2^25; the loss: 4 * 4096 * 2^16 = 2^30.
  EXPECT_EQ(setup.secure_scale_log2, 24);
  EXPECT_EQ(setup.secure_loss_scale_log2, 16);
  (void)job.TakeData();
  for (uint32_t id : ids) started = job.OnReport(id, 1, Report(), kMs);
  ASSERT_EQ(started.size(), 1u);
  const tf::TrainParameters p = Decode(started[0]);
  EXPECT_TRUE(p.secure_sum);
  EXPECT_TRUE(p.train);
  EXPECT_EQ(p.secure_scale_log2, 24);
  const std::vector<float> initial = job.parameters();

  std::map<uint32_t, bool> aggregation_seen;
  for (const DeviceData& d : job.TakeData()) {
    EXPECT_EQ(d.round, 2u);
    if (d.kind == tf::kTrainParams) {
      EXPECT_FALSE(aggregation_seen[d.device]) << "parameters after the aggregation's records";
      continue;
    }
    ASSERT_TRUE(nodefl::secagg::IsAggregationKind(d.kind)) << d.kind;
    if (d.kind == nodefl::secagg::kAggStart) {
      Result<nodefl::secagg::AggStart> a = nodefl::secagg::DecodeAggStart(ConstByteSpan(d.bytes));
      ASSERT_TRUE(a.ok());
      EXPECT_EQ(a->length, tf::TrainSecureLength(static_cast<uint32_t>(job.layout().total)));
      EXPECT_EQ(a->mode, nodefl::secagg::AggMode::kRobust);
      EXPECT_EQ(a->peer_count, 3u);  // 2 ceil(log2 4) = 4 peers, capped at n - 1
    }
    aggregation_seen[d.device] = true;
  }
  EXPECT_EQ(aggregation_seen.size(), ids.size());

  EXPECT_TRUE(job.OnUpload(3, 2, tf::kTrainGradient, Record(0, {1.0f}), 2 * kMs).empty());
  EXPECT_EQ(job.summary().protocol_errors, 1u);
  for (uint32_t id : ids) job.OnUndeliverable(id, 3 * kMs);
  started = job.Poll(3 * kMs);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_FALSE(Decode(started[0]).train);  // the evaluation epoch
  ASSERT_EQ(job.epochs().size(), 1u);
  const LumosTrainEpoch& e = job.epochs()[0];
  EXPECT_FALSE(e.updated);
  EXPECT_EQ(e.aggregation.rfind("aborted", 0), 0u) << e.aggregation;
  EXPECT_EQ(e.stragglers, 4u);
  EXPECT_EQ(job.summary().aggregations_aborted, 1u);
  EXPECT_EQ(job.parameters(), initial);
}

TEST(LumosTrainPlan, SecureSumNeedsTrainingAndAClip) {
  ServerConfig config = LumosTreesConfig();
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_sum", "true").ok);
  ConfigStatus status = ValidateConfig(config);
  EXPECT_NE(status.message.find("lumos_secure_sum: needs lumos_train=node or link"), std::string::npos)
      << status.message;
  ASSERT_TRUE(SetConfigValue(config, "lumos_train", "node").ok);
  ASSERT_TRUE(SetConfigValue(config, "lumos_features", "1433").ok);
  ASSERT_TRUE(SetConfigValue(config, "lumos_classes", "7").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  const LumosJobConfig& c = Options<LumosJobConfig>(config);
  EXPECT_TRUE(c.secure_sum);
  EXPECT_EQ(c.secure_peers, 0u);
  EXPECT_EQ(c.secure_threshold, 0u);
  for (const char* clip : {"0", "-1", "inf", "nan", "1e40"}) {
    ASSERT_TRUE(SetConfigValue(config, "lumos_secure_clip", clip).ok) << clip;
    EXPECT_NE(ValidateConfig(config).message.find("lumos_secure_clip"), std::string::npos) << clip;
  }
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_clip", "256").ok);
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_peers", "16001").ok);
  EXPECT_NE(ValidateConfig(config).message.find("lumos_secure_peers"), std::string::npos);
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_peers", "12").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_threshold", "13").ok);
  EXPECT_NE(ValidateConfig(config).message.find("lumos_secure_threshold"), std::string::npos);
  ASSERT_TRUE(SetConfigValue(config, "lumos_secure_threshold", "7").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
}

TEST(LumosTrainJobLinkTest, ANodeJobRefusesLinkScores) {
  LumosTrainJob job(Options2Epochs(), {1, 2});
  ASSERT_EQ(job.Begin(0).size(), 1u);
  (void)job.TakeData();
  EXPECT_TRUE(job.OnReport(1, 1, Report(), kMs).empty());
  ASSERT_EQ(job.OnReport(2, 1, Report(), kMs).size(), 1u);
  EXPECT_TRUE(job.OnUpload(1, 2, tf::kTrainLinkScores, Scores(1, {{1, 1}}), kMs).empty());
  EXPECT_EQ(job.summary().protocol_errors, 1u);
}

TEST(LumosTrainPlan, LinkTrainingNeedsFeaturesNotClassesAndBoundsThePartners) {
  ServerConfig config = LumosTreesConfig();
  ASSERT_TRUE(SetConfigValue(config, "lumos_train", "link").ok);
  ConfigStatus status = ValidateConfig(config);
  EXPECT_NE(status.message.find("lumos_features: required with lumos_train=link"), std::string::npos)
      << status.message;
  ASSERT_TRUE(SetConfigValue(config, "lumos_features", "1433").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"secure-compare", "lumos-trim", "lumos-train"}));
  const LumosJobConfig& c = Options<LumosJobConfig>(config);
  EXPECT_EQ(c.negatives, 4u);
  EXPECT_EQ(c.eval_negatives, 2u);
  EXPECT_EQ(c.edge_seed, 1u);
  ASSERT_TRUE(SetConfigValue(config, "lumos_negatives", "33").ok);
  EXPECT_NE(ValidateConfig(config).message.find("lumos_negatives: must be 1 .. 32"), std::string::npos);
  ASSERT_TRUE(SetConfigValue(config, "lumos_negatives", "32").ok);
  ASSERT_TRUE(SetConfigValue(config, "lumos_eval_negatives", "0").ok);
  EXPECT_NE(ValidateConfig(config).message.find("lumos_eval_negatives: must be 1 .. 32"), std::string::npos);
  ASSERT_TRUE(SetConfigValue(config, "lumos_eval_negatives", "1").ok);
  ASSERT_TRUE(SetConfigValue(config, "lumos_edge_seed", "77").ok);
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
}

}  // namespace
}  // namespace nodefl::server::jobs
