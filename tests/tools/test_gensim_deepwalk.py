#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of the gensim DeepWalk baseline: the uniform walk generator
(server/tools/uniform_walks.py) on its own, the missing-gensim exit (code 3,
no traceback) and, where python3-gensim is installed, a short end-to-end run
on karate whose embeddings score well above chance."""

import collections
import importlib.util
import os
import tempfile
import unittest

import tools_test_support as support

import numpy as np

from cli_support import InputError
from uniform_walks import read_graph, walk_passes, write_walks

HAVE_GENSIM = importlib.util.find_spec("gensim") is not None
KARATE = os.path.join(support.DATASETS, "karate")


class UniformWalksTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory(prefix="nodefl-walks-test-")
        self.dir = self.folder.name

    def tearDown(self):
        self.folder.cleanup()

    def graph(self, edges_text):
        support.write_text(os.path.join(self.dir, "edges.tsv"), edges_text)
        return read_graph(self.dir)

    def test_adjacency_is_symmetric_and_deduplicated(self):
        indptr, indices = self.graph("0\t1\n1\t2\n0\t1\n2\t2\n")
        neighbours = [indices[indptr[v]:indptr[v + 1]].tolist() for v in range(3)]
        self.assertEqual(neighbours, [[1], [0, 2], [1]])

    def test_walks_follow_edges_and_start_everywhere(self):
        # A path 0-1-2-3 plus an isolated node 5 (4 has no edge line at all).
        indptr, indices = self.graph("0\t1\n1\t2\n2\t3\n5\t5\n")
        edges = {(0, 1), (1, 2), (2, 3)}
        edges |= {(v, u) for u, v in edges}
        passes = list(walk_passes(indptr, indices, gamma=3, length=6, seed=5))
        self.assertEqual(len(passes), 3)
        for walks in passes:
            self.assertEqual(walks.shape, (6, 6))
            self.assertEqual(sorted(walks[:, 0].tolist()), list(range(6)))
            for walk in walks:
                live = walk[walk >= 0].tolist()
                if live[0] in (4, 5):
                    self.assertEqual(live, [live[0]])  # no neighbour: stops at once
                    continue
                self.assertEqual(len(live), 6)
                for u, v in zip(live, live[1:]):
                    self.assertIn((u, v), edges)

    def test_steps_are_uniform_over_neighbours(self):
        # Star: centre 0 with leaves 1..4; every step from 0 picks a leaf
        # with probability 1/4.
        indptr, indices = self.graph("0\t1\n0\t2\n0\t3\n0\t4\n")
        counts = collections.Counter()
        for walks in walk_passes(indptr, indices, gamma=400, length=3, seed=9):
            for walk in walks:
                if walk[1] == 0:
                    counts[int(walk[2])] += 1
        total = sum(counts.values())
        self.assertEqual(total, 1600)  # 4 leaves start, each steps to 0 first
        for leaf in range(1, 5):
            self.assertAlmostEqual(counts[leaf] / total, 0.25, delta=0.05)

    def test_same_seed_same_walks(self):
        indptr, indices = read_graph(KARATE)
        a = np.vstack(list(walk_passes(indptr, indices, 2, 10, seed=3)))
        b = np.vstack(list(walk_passes(indptr, indices, 2, 10, seed=3)))
        c = np.vstack(list(walk_passes(indptr, indices, 2, 10, seed=4)))
        np.testing.assert_array_equal(a, b)
        self.assertFalse(np.array_equal(a, c))

    def test_write_walks_counts_tokens(self):
        indptr, indices = self.graph("0\t1\n")
        path = os.path.join(self.dir, "walks.txt")
        tokens = write_walks(path, walk_passes(indptr, indices, 2, 4, seed=1))
        with open(path, encoding="ascii") as f:
            lines = f.read().split("\n")
        self.assertEqual(tokens, 16)
        self.assertEqual(lines[-1], "")
        self.assertEqual(len(lines) - 1, 4)
        self.assertIn(lines[0], ("0 1 0 1", "1 0 1 0"))

    def test_bad_edge_line_names_the_line(self):
        with self.assertRaises(InputError) as caught:
            self.graph("0\t1\n1\tx\n")
        self.assertIn("edges.tsv:2: node ids must be integers", str(caught.exception))


class GensimDeepWalkCommandTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory(prefix="nodefl-gensim-test-")
        self.dir = self.folder.name
        self.emb = os.path.join(self.dir, "karate.emb")

    def tearDown(self):
        self.folder.cleanup()

    def test_without_gensim_exits_3_without_traceback(self):
        stub = os.path.join(self.dir, "stub", "gensim")
        os.makedirs(stub)
        support.write_text(os.path.join(stub, "__init__.py"),
                           "raise ImportError('gensim hidden by the test')\n")
        run = support.run_tool("gensim_deepwalk.py", "--walks-from-graph", KARATE,
                               "--output", self.emb,
                               env_extra={"PYTHONPATH": os.path.dirname(stub)})
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("python3-gensim", run.stderr)
        self.assertNotIn("Traceback", run.stderr)
        self.assertFalse(os.path.exists(self.emb))

    def test_needs_exactly_one_walk_source(self):
        run = support.run_tool("gensim_deepwalk.py", "--output", self.emb)
        self.assertEqual(run.returncode, 2)
        self.assertIn("one of the arguments --walks --walks-from-graph is required", run.stderr)

    def test_mode_is_corpus_file_or_iterable(self):
        run = support.run_tool("gensim_deepwalk.py", "--walks-from-graph", KARATE, "--output", self.emb,
                               "--mode", "stream")
        self.assertEqual(run.returncode, 2)
        self.assertIn("invalid choice: 'stream'", run.stderr)

    @unittest.skipUnless(HAVE_GENSIM, "python3-gensim is not installed")
    def test_iterable_mode_trains_the_same_walks(self):
        walks = os.path.join(self.dir, "walks.txt")
        run = support.run_tool("gensim_deepwalk.py", "--walks-from-graph", KARATE,
                               "--gamma", "20", "--length", "20", "--dim", "16", "--window", "5",
                               "--workers", "2", "--seed", "1", "--write-walks", walks,
                               "--mode", "iterable", "--output", self.emb)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stdout, r"tokens 13600 +seconds [0-9.]+ +tokens/s [0-9]+")
        with open(self.emb, encoding="utf-8") as f:
            self.assertEqual(f.readline().split(), ["34", "16"])

    @unittest.skipUnless(HAVE_GENSIM, "python3-gensim is not installed")
    def test_bad_walk_file_names_the_line(self):
        walks = os.path.join(self.dir, "walks.txt")
        support.write_text(walks, "0 1 2\n3 x 4\n")
        run = support.run_tool("gensim_deepwalk.py", "--walks", walks, "--output", self.emb)
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"{walks}:2: 'x' is not a node id", run.stderr)

    @unittest.skipUnless(HAVE_GENSIM, "python3-gensim is not installed")
    def test_karate_embeddings_separate_the_two_clubs(self):
        walks = os.path.join(self.dir, "walks.txt")
        run = support.run_tool("gensim_deepwalk.py", "--walks-from-graph", KARATE,
                               "--gamma", "20", "--length", "20", "--dim", "16", "--window", "5",
                               "--workers", "1", "--seed", "1", "--write-walks", walks,
                               "--output", self.emb)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stdout, r"tokens 13600 +seconds [0-9.]+ +tokens/s [0-9]+")
        with open(self.emb, encoding="utf-8") as f:
            self.assertEqual(f.readline().split(), ["34", "16"])
        score = support.run_tool("score_embeddings.py", "--embeddings", self.emb, "--labels",
                                 os.path.join(KARATE, "labels.tsv"), "--ratios", "0.5",
                                 "--shuffles", "5")
        self.assertEqual(score.returncode, 0, score.stderr)
        micro = float(score.stdout.splitlines()[1].split()[3])
        # Two balanced-ish clubs: chance is about 0.5; DeepWalk finds them.
        self.assertGreater(micro, 0.8, score.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
