// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-lumos-central: the centralized baselines of Lumos Sec. VIII (GCN
// or GAT on the whole graph with raw features) on a dataset in the shared
// layout, with the devices' layer code (sdk/gnn) and Lumos's
// hyper-parameters: node classification on the seeded 50/25/25 node split,
// or link prediction on the 80/5/15 edge split the devices apply
// (central.h). Prints a line per epoch on stderr (loss, accuracy per split
// or validation and test ROC-AUC) and a summary line on stdout; --output
// writes the learning curve as TSV.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/training/central.h"

namespace {

namespace lumos = nodefl::server::lumos;
constexpr const char* kTool = "nodefl-lumos-central";

struct Options {
  std::string graph;
  std::string task = "node";
  std::string model = "gcn";
  uint32_t epochs = 300;
  uint64_t seed = 1;
  uint64_t split_seed = 1;
  uint64_t edge_seed = 1;
  uint32_t negatives = 4;
  uint32_t eval_negatives = 2;
  double dropout = 0.01;
  double learning_rate = 0.01;
  uint32_t hidden = 16;
  uint32_t out = 16;
  uint32_t heads = 4;
  uint32_t every = 10;
  std::string output;
};

void Usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nodefl-lumos-central --graph DIR [options]\n"
               "Centralized GCN or GAT node classification or link prediction on a whole\n"
               "dataset (Lumos's baselines), with the layer code the devices run (sdk/gnn).\n"
               "  --graph DIR          dataset in the shared TSV layout with features.tsv and,\n"
               "                       for node classification, single-label labels.tsv\n"
               "                       (e.g. cora, facebook)\n"
               "  --task T             node (default: node classification) or link (link\n"
               "                       prediction, Lumos Sec. VI-C: edges 80/5/15, ROC-AUC)\n"
               "  --model M            gcn (default) or gat\n"
               "  --epochs N           training epochs (default 300, as Lumos)\n"
               "  --hidden N, --out N  hidden and output widths (default 16 and 16)\n"
               "  --heads N            GAT heads (default 4; must divide hidden and out)\n"
               "  --dropout P          dropout after the first layer (default 0.01)\n"
               "  --learning-rate R    Adam's learning rate (default 0.01)\n"
               "  --seed S             initialisation and dropout (default 1)\n"
               "  --split-seed S       node: the 50/25/25 node split; link: the random partner\n"
               "                       draw (default 1; the federated job draws the same for\n"
               "                       the same seed when node ids are device ids)\n"
               "  --edge-seed S        link: the 80/5/15 edge split (default 1, as the job's\n"
               "                       lumos_edge_seed)\n"
               "  --negatives N        link: training partners per node at most (default 4)\n"
               "  --eval-negatives N   link: evaluation partners per node at most (default 2)\n"
               "  --every N            print every N epochs (default 10; 0: only the summary)\n"
               "  --output TSV         learning curve: epoch, loss, train, validation, test\n"
               "                       (link: epoch, loss, terms, validation_auc, test_auc)\n"
               "  --help               this text\n"
               "The summary reports the test accuracy (link: test AUC) at the epoch of best\n"
               "validation accuracy (link: validation AUC).\n");
}

bool Parse(int argc, char** argv, Options* o) {
  namespace cli = nodefl::host::cli;
  cli::FlagParser flags(kTool);
  flags.Value("--graph", cli::Text(&o->graph))
      .Value("--task", cli::OneOf({"node", "link"}, [o](const std::string& v) { o->task = v; }))
      .Value("--model", cli::OneOf({"gcn", "gat"}, [o](const std::string& v) { o->model = v; }))
      .Value("--epochs", cli::Whole(&o->epochs, 1, 100'000))
      .Value("--hidden", cli::Whole(&o->hidden, 1, 4096))
      .Value("--out", cli::Whole(&o->out, 1, 4096))
      .Value("--heads", cli::Whole(&o->heads, 1, 64))
      .Value("--dropout", cli::Real(&o->dropout, 0.0, false, 0.99))
      .Value("--learning-rate", cli::Real(&o->learning_rate, 0.0, true, 10.0))
      .Value("--seed", cli::Whole(&o->seed, 0, UINT64_MAX))
      .Value("--split-seed", cli::Whole(&o->split_seed, 0, UINT64_MAX))
      .Value("--edge-seed", cli::Whole(&o->edge_seed, 0, UINT64_MAX))
      .Value("--negatives", cli::Whole(&o->negatives, 1, 32))
      .Value("--eval-negatives", cli::Whole(&o->eval_negatives, 1, 32))
      .Value("--every", cli::Whole(&o->every, 0, 100'000))
      .Value("--output", cli::Text(&o->output));
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    Usage(stdout);
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  if (!cli::RequireDirectory(kTool, "--graph", o->graph)) return false;
  if (o->model == "gat" && (o->hidden % o->heads != 0 || o->out % o->heads != 0)) {
    std::fprintf(stderr, "%s: --heads %u must divide --hidden %u and --out %u\n", kTool, o->heads, o->hidden, o->out);
    return false;
  }
  return true;
}

lumos::CentralOptions CentralOptionsOf(const Options& o) {
  lumos::CentralOptions c;
  c.shape.layer = o.model == "gat" ? nodefl::gnn::LayerKind::kGat : nodefl::gnn::LayerKind::kGcn;
  c.shape.hidden = o.hidden;
  c.shape.out = o.out;
  c.shape.heads = o.heads;
  c.shape.dropout = static_cast<float>(o.dropout);
  c.epochs = o.epochs;
  c.seed = o.seed;
  c.adam.learning_rate = o.learning_rate;
  return c;
}

int RunNode(const Options& o, const nodefl::dataset::Graph& g) {
  const lumos::CentralOptions c = CentralOptionsOf(o);
  const std::vector<lumos::Split> split = lumos::SplitNodes(g.num_nodes, o.split_seed);
  const lumos::CentralResult r = lumos::TrainCentralNodeClassifier(g, split, c, [&](const lumos::EpochMetrics& m) {
    if (o.every != 0 && (m.epoch % o.every == 0 || m.epoch == 1)) {
      std::fprintf(stderr, "%s: epoch %u loss %.4f accuracy train %.4f validation %.4f test %.4f (%.2f s)\n", kTool,
                   m.epoch, m.loss, m.accuracy[0], m.accuracy[1], m.accuracy[2], m.seconds);
    }
  });
  if (!r.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, r.error.c_str());
    return 1;
  }
  if (!o.output.empty()) {
    std::ofstream out(o.output);
    out << "epoch\tloss\ttrain\tvalidation\ttest\n";
    for (const auto& m : r.epochs) {
      out << m.epoch << '\t' << m.loss << '\t' << m.accuracy[0] << '\t' << m.accuracy[1] << '\t' << m.accuracy[2]
          << '\n';
    }
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", kTool, o.output.c_str());
      return 1;
    }
  }
  const auto& last = r.epochs.back();
  std::printf("central %s on %s: parameters %zu, epochs %u, best validation %.4f at epoch %u, test %.4f there; "
              "last epoch train %.4f validation %.4f test %.4f; %.1f s\n",
              o.model.c_str(), g.name.c_str(), r.parameters, o.epochs, r.best_validation, r.best_epoch,
              r.test_at_best, last.accuracy[0], last.accuracy[1], last.accuracy[2], r.seconds);
  return 0;
}

int RunLink(const Options& o, const nodefl::dataset::Graph& g) {
  const lumos::CentralOptions c = CentralOptionsOf(o);
  lumos::LinkOptions link;
  link.edge_seed = o.edge_seed;
  link.negatives = o.negatives;
  link.eval_negatives = o.eval_negatives;
  link.partner_seed = o.split_seed;
  const lumos::CentralLinkResult r =
      lumos::TrainCentralLinkPredictor(g, c, link, [&](const lumos::LinkEpochMetrics& m) {
        if (o.every != 0 && (m.epoch % o.every == 0 || m.epoch == 1)) {
          std::fprintf(stderr, "%s: epoch %u loss %.4f auc validation %.4f test %.4f (%.2f s)\n", kTool, m.epoch,
                       m.loss, m.validation_auc, m.test_auc, m.seconds);
        }
      });
  if (!r.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, r.error.c_str());
    return 1;
  }
  if (!o.output.empty()) {
    std::ofstream out(o.output);
    out << "epoch\tloss\tterms\tvalidation_auc\ttest_auc\n";
    for (const auto& m : r.epochs) {
      out << m.epoch << '\t' << m.loss << '\t' << m.terms << '\t' << m.validation_auc << '\t' << m.test_auc << '\n';
    }
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", kTool, o.output.c_str());
      return 1;
    }
  }
  const auto& last = r.epochs.back();
  std::printf("central %s link on %s: parameters %zu, epochs %u, edges train %" PRIu64 " validation %" PRIu64
              " test %" PRIu64 ", negatives training %" PRIu64 " evaluation %" PRIu64 ", best validation AUC %.4f at "
              "epoch %u, test AUC %.4f there; last epoch validation AUC %.4f test AUC %.4f; %.1f s\n",
              o.model.c_str(), g.name.c_str(), r.parameters, o.epochs, r.edges[0], r.edges[1], r.edges[2],
              r.negatives, r.eval_negatives, r.best_validation, r.best_epoch, r.test_at_best, last.validation_auc,
              last.test_auc, r.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  const nodefl::dataset::LoadResult loaded = nodefl::dataset::LoadGraph(o.graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "%s: %s\n", kTool, loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  const bool link = o.task == "link";
  std::fprintf(stderr, "%s: %s, %u nodes, %" PRIu64 " edges, %u features, %u classes; %s%s, %u epochs\n", kTool,
               g.name.c_str(), g.num_nodes, g.num_edges, g.num_feature_dims, g.num_label_classes, o.model.c_str(),
               link ? " link prediction" : "", o.epochs);
  return link ? RunLink(o, g) : RunNode(o, g);
}
