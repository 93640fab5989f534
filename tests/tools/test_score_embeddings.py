#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of the DeepWalk evaluation protocol (server/tools/deepwalk_protocol.py)
and its command line (score_embeddings.py) on synthetic data whose scores are
known in advance."""

import json
import os
import tempfile
import unittest

import tools_test_support as support

import numpy as np

from deepwalk_protocol import evaluate, label_matrix, predict_top_k, score_split


def single_label(nodes, classes):
    """Balanced classes: node i has class i mod `classes`."""
    return {i: [i % classes] for i in range(nodes)}


def k_of_l_labels(nodes, k, labels, rng):
    """Every node gets k distinct labels out of `labels`, uniformly."""
    return {i: sorted(rng.choice(labels, size=k, replace=False).tolist()) for i in range(nodes)}


def as_matrix(labels_of):
    nodes = sorted(labels_of)
    values = sorted({l for ls in labels_of.values() for l in ls})
    return label_matrix(nodes, labels_of, values)


class ScoresOnKnownCases(unittest.TestCase):
    def test_noisy_one_hot_of_the_labels_scores_near_one(self):
        rng = np.random.default_rng(11)
        y = as_matrix(single_label(400, 4))
        # The label indicator plus noise, and 4 columns of pure noise.
        x = np.hstack([y + rng.normal(0, 0.3, y.shape), rng.normal(0, 1, (400, 4))])
        results = evaluate(x, y, [0.3, 0.7], shuffles=3, seed=0)
        for r in results:
            self.assertGreater(r.micro_mean, 0.95, r)
            self.assertGreater(r.macro_mean, 0.95, r)

    def test_noisy_one_hot_multi_label_scores_near_one(self):
        rng = np.random.default_rng(12)
        labels_of = {i: sorted(rng.choice(6, size=1 + i % 3, replace=False).tolist())
                     for i in range(450)}
        y = as_matrix(labels_of)
        x = y + rng.normal(0, 0.25, y.shape)
        (r,) = evaluate(x, y, [0.5], shuffles=3, seed=0)
        self.assertGreater(r.micro_mean, 0.9, r)

    def test_random_embeddings_score_at_chance_single_label(self):
        # Chance level: when features carry no information, the predicted
        # class is independent of the true one. With K balanced classes,
        # P(hit) = sum_c P(pred = c) * P(true = c) = sum_c P(pred = c) / K
        # = 1/K, whatever the classifier predicts. K = 4 -> 0.25.
        rng = np.random.default_rng(13)
        y = as_matrix(single_label(1200, 4))
        x = rng.normal(0, 1, (1200, 16))
        (r,) = evaluate(x, y, [0.5], shuffles=5, seed=0)
        # One shuffle has 600 test nodes: std sqrt(.25 * .75 / 600) = 0.018.
        self.assertAlmostEqual(r.micro_mean, 0.25, delta=0.05)

    def test_random_embeddings_score_at_chance_multi_label(self):
        # Every node has k = 2 of L = 6 labels drawn uniformly; any 2 labels
        # chosen independently of them hit k * (k / L) in expectation, and
        # with k predictions per node Micro-F1 = hits / k = k / L = 1/3.
        rng = np.random.default_rng(14)
        y = as_matrix(k_of_l_labels(1200, 2, 6, rng))
        x = rng.normal(0, 1, (1200, 16))
        (r,) = evaluate(x, y, [0.5], shuffles=5, seed=0)
        self.assertAlmostEqual(r.micro_mean, 1 / 3, delta=0.05)

    def test_same_seed_same_scores_other_seed_other_splits(self):
        rng = np.random.default_rng(15)
        y = as_matrix(single_label(200, 3))
        x = y + rng.normal(0, 1.0, y.shape)
        a = evaluate(x, y, [0.5], shuffles=3, seed=7)[0]
        b = evaluate(x, y, [0.5], shuffles=3, seed=7)[0]
        c = evaluate(x, y, [0.5], shuffles=3, seed=8)[0]
        self.assertEqual(a.micro_f1, b.micro_f1)
        self.assertNotEqual(a.micro_f1, c.micro_f1)

    def test_worker_processes_give_the_same_scores(self):
        rng = np.random.default_rng(18)
        y = as_matrix(single_label(120, 3))
        x = y + rng.normal(0, 1.0, y.shape)
        one = evaluate(x, y, [0.5], shuffles=2, seed=3, threads=1)[0]
        two = evaluate(x, y, [0.5], shuffles=2, seed=3, threads=2)[0]
        self.assertEqual(one.micro_f1, two.micro_f1)
        self.assertEqual(one.macro_f1, two.macro_f1)

    def test_ratio_that_leaves_no_training_node_is_refused(self):
        y = as_matrix(single_label(20, 2))
        with self.assertRaisesRegex(ValueError, "0 training"):
            evaluate(np.zeros((20, 2)), y, [0.01], shuffles=1)


class TopKRule(unittest.TestCase):
    def test_each_row_gets_its_own_k_even_below_one_half(self):
        probabilities = np.array([[0.10, 0.40, 0.30, 0.20],
                                  [0.90, 0.80, 0.05, 0.60],
                                  [0.01, 0.02, 0.03, 0.04]])
        predicted = predict_top_k(probabilities, [2, 1, 3])
        np.testing.assert_array_equal(predicted, [[0, 1, 1, 0],
                                                  [1, 0, 0, 0],
                                                  [0, 1, 1, 1]])

    def test_ties_go_to_the_lower_column(self):
        predicted = predict_top_k(np.array([[0.5, 0.5, 0.5]]), [2])
        np.testing.assert_array_equal(predicted, [[1, 1, 0]])

    def test_trained_classifier_predicts_as_many_labels_as_each_node_has(self):
        rng = np.random.default_rng(16)
        labels_of = {i: sorted(rng.choice(5, size=1 + i % 3, replace=False).tolist())
                     for i in range(240)}
        y = as_matrix(labels_of)
        x = rng.normal(0, 1, (240, 8))
        _, _, predicted = score_split(x[:120], y[:120], x[120:], y[120:])
        np.testing.assert_array_equal(predicted.sum(axis=1), y[120:].sum(axis=1))
        two = [i for i in range(120) if y[120 + i].sum() == 2]
        self.assertTrue(two)
        for i in two:
            self.assertEqual(int(predicted[i].sum()), 2)


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory(prefix="nodefl-score-test-")
        self.dir = self.folder.name
        rng = np.random.default_rng(17)
        self.labels_of = {i: [i % 3] + ([3] if i % 4 == 0 else []) for i in range(90)}
        y = as_matrix(self.labels_of)
        self.vectors = y + rng.normal(0, 0.2, y.shape)
        self.emb = os.path.join(self.dir, "nodes.emb")
        self.labels = os.path.join(self.dir, "labels.tsv")
        support.write_embeddings(self.emb, list(range(90)), self.vectors)
        support.write_labels(self.labels, self.labels_of)

    def tearDown(self):
        self.folder.cleanup()

    def test_table_json_and_progress(self):
        out = os.path.join(self.dir, "scores.json")
        run = support.run_tool("score_embeddings.py", "--embeddings", self.emb, "--labels",
                               self.labels, "--ratios", "0.3,0.6", "--shuffles", "2",
                               "--json", out)
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = [l for l in run.stdout.splitlines() if l.strip().startswith(("0.30", "0.60"))]
        self.assertEqual(len(rows), 2, run.stdout)
        self.assertIn("Micro-F1", run.stdout)
        self.assertIn("ratio 0.30:", run.stderr)
        self.assertIn("ratio 0.60:", run.stderr)
        with open(out, encoding="utf-8") as f:
            report = json.load(f)
        self.assertEqual(report["nodes"], 90)
        self.assertEqual(report["label_count"], 4)
        self.assertEqual([r["ratio"] for r in report["results"]], [0.3, 0.6])
        first = report["results"][0]
        self.assertEqual((first["train_size"], first["test_size"]), (27, 63))
        self.assertEqual(len(first["micro_f1"]), 2)
        self.assertGreater(first["micro_f1_mean"], 0.8)
        self.assertAlmostEqual(first["micro_f1_mean"], np.mean(first["micro_f1"]))

    def test_missing_embedding_is_an_error_unless_allowed(self):
        support.write_embeddings(self.emb, list(range(88)), self.vectors[:88])
        run = support.run_tool("score_embeddings.py", "--embeddings", self.emb,
                               "--labels", self.labels, "--ratios", "0.5", "--shuffles", "1")
        self.assertEqual(run.returncode, 1)
        self.assertIn("2 of 90 labelled nodes have no embedding (e.g. 88, 89)", run.stderr)
        self.assertNotIn("Traceback", run.stderr)
        run = support.run_tool("score_embeddings.py", "--embeddings", self.emb,
                               "--labels", self.labels, "--ratios", "0.5", "--shuffles", "1",
                               "--allow-missing")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("dropping 2 of 90 labelled nodes", run.stderr)
        self.assertIn(" 44      44 ", run.stdout)  # 88 nodes: 44 train, 44 test

    def test_malformed_embeddings_name_file_and_line(self):
        with open(self.emb, encoding="utf-8") as f:
            lines = f.readlines()
        lines[3] = "2 0.5 abc 0.1 0.2\n"  # line 4 of the file
        support.write_text(self.emb, "".join(lines))
        run = support.run_tool("score_embeddings.py", "--embeddings", self.emb,
                               "--labels", self.labels)
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"{self.emb}:4: value 'abc' is not a number", run.stderr)
        self.assertNotIn("Traceback", run.stderr)

    def test_bad_arguments_exit_2_and_help_exits_0(self):
        run = support.run_tool("score_embeddings.py", "--embeddings", self.emb,
                               "--labels", self.labels, "--ratios", "0.5,1.0")
        self.assertEqual(run.returncode, 2)
        self.assertIn("ratio 1.0 is not strictly between 0 and 1", run.stderr)
        run = support.run_tool("score_embeddings.py", "--help")
        self.assertEqual(run.returncode, 0)
        for option in ("--embeddings", "--labels", "--ratios", "--shuffles", "--seed", "--json",
                       "--threads", "--allow-missing"):
            self.assertIn(option, run.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
