#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of server/tools/make_community_graph.py: the shared dataset layout
(u < v, no self-loops or repeats, contiguous ids, one label per node), the
requested mixing and mean degree within sampling tolerance, determinism by
seed, and refusal of bad arguments."""

import os
import tempfile
import unittest

import tools_test_support  # noqa: F401  (import path)
from tools_test_support import run_tool


def read_edges(folder):
    with open(os.path.join(folder, "edges.tsv"), encoding="utf-8") as f:
        return [tuple(map(int, line.split("\t"))) for line in f if line.strip()]


def read_labels(folder):
    with open(os.path.join(folder, "labels.tsv"), encoding="utf-8") as f:
        return dict(tuple(map(int, line.split("\t"))) for line in f if line.strip())


class MakeCommunityGraphTest(unittest.TestCase):
    def generate(self, folder, *args):
        r = run_tool("make_community_graph.py", "--out", folder, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return read_edges(folder), read_labels(folder)

    def test_layout_mixing_and_degree(self):
        with tempfile.TemporaryDirectory() as d:
            edges, labels = self.generate(d, "--nodes", "2000", "--communities", "10", "--mu", "0.3",
                                          "--mean-degree", "10", "--seed", "4")
            self.assertTrue(all(u < v for u, v in edges))
            self.assertEqual(len(set(edges)), len(edges))
            self.assertEqual(sorted(labels), list(range(2000)))
            self.assertEqual(len(set(labels.values())), 10)
            self.assertLess(max(v for _, v in edges), 2000)
            inside = sum(labels[u] == labels[v] for u, v in edges) / len(edges)
            # Stubs are matched inside communities for 1 - mu of each degree;
            # dropped repeats and rounding move it by a few percent.
            self.assertAlmostEqual(inside, 0.7, delta=0.05)
            mean_degree = 2 * len(edges) / 2000
            self.assertGreater(mean_degree, 7.0)
            self.assertLess(mean_degree, 11.0)
            with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
                self.assertIn("make_community_graph.py", f.read())

    def test_the_seed_decides_the_graph(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
                tempfile.TemporaryDirectory() as c:
            ea, _ = self.generate(a, "--nodes", "300", "--seed", "9")
            eb, _ = self.generate(b, "--nodes", "300", "--seed", "9")
            ec, _ = self.generate(c, "--nodes", "300", "--seed", "10")
            self.assertEqual(ea, eb)
            self.assertNotEqual(ea, ec)

    def test_bad_arguments_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for args in (["--mu", "1.5"], ["--degree-exponent", "2"], ["--communities", "0"],
                         ["--nodes", "1"]):
                r = run_tool("make_community_graph.py", "--out", d, *args)
                self.assertEqual(r.returncode, 2, args)


if __name__ == "__main__":
    unittest.main()
