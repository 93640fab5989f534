#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of server/tools/plot_messages_per_walk.py: the table reader, the
missing-matplotlib exit (code 3, no traceback) and, where python3-matplotlib
is installed, that a real PNG comes out."""

import importlib.util
import os
import tempfile
import unittest

import tools_test_support as support

from cli_support import InputError
from plot_messages_per_walk import read_table
from theorem42 import messages_eq21

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PlotMessagesPerWalkTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory(prefix="nodefl-plot-test-")
        self.dir = self.folder.name
        self.table = os.path.join(self.dir, "messages.tsv")
        rows = ["p\tmeasured_mean\tmeasured_stderr\ttheorem"]
        for p in (0.0, 0.2, 0.4):
            rows.append(f"{p}\t{messages_eq21(40, p) + 0.3:.4f}\t0.02\t{messages_eq21(40, p):.4f}")
        support.write_text(self.table, "\n".join(rows) + "\n")
        self.png = os.path.join(self.dir, "messages.png")

    def tearDown(self):
        self.folder.cleanup()

    def test_reads_rows_sorted_by_p_with_or_without_header(self):
        support.write_text(self.table, "# measured on karate\n0.5\t26.0\t0.1\t25.6\n0\t39\t0\t39\n")
        self.assertEqual(read_table(self.table), [(0.0, 39.0, 0.0, 39.0), (0.5, 26.0, 0.1, 25.6)])

    def test_malformed_table_names_the_line(self):
        cases = [("0.1\t30\t0.1\n", "1: expected 4 columns"),
                 ("0.1\t30\t0.1\t29\np\tmean\tse\tth\n", "2: a column is not a number"),
                 ("1.5\t30\t0.1\t29\n", "1: p = 1.5 is not in [0, 1]"),
                 ("0.1\t30\t-1\t29\n", "1: negative stderr"),
                 ("# nothing\n", "no data rows")]
        for text, message in cases:
            with self.subTest(text=text):
                support.write_text(self.table, text)
                with self.assertRaises(InputError) as caught:
                    read_table(self.table)
                self.assertIn(message, str(caught.exception))

    def test_without_matplotlib_exits_3_without_traceback(self):
        # A package named matplotlib earlier on the path that fails to import
        # stands in for a machine without python3-matplotlib.
        stub = os.path.join(self.dir, "stub", "matplotlib")
        os.makedirs(stub)
        support.write_text(os.path.join(stub, "__init__.py"),
                           "raise ImportError('matplotlib hidden by the test')\n")
        run = support.run_tool("plot_messages_per_walk.py", self.table, "--output", self.png,
                               env_extra={"PYTHONPATH": os.path.dirname(stub)})
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("matplotlib", run.stderr)
        self.assertIn("python3-matplotlib", run.stderr)
        self.assertNotIn("Traceback", run.stderr)
        self.assertFalse(os.path.exists(self.png))

    @unittest.skipUnless(HAVE_MATPLOTLIB, "python3-matplotlib is not installed")
    def test_writes_a_png(self):
        run = support.run_tool("plot_messages_per_walk.py", self.table, "--output", self.png,
                               "--length", "40")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("3 rows", run.stdout)
        with open(self.png, "rb") as f:
            data = f.read()
        self.assertTrue(data.startswith(PNG_SIGNATURE))
        self.assertGreater(len(data), 10000)  # an actual plot, not an empty canvas

    @unittest.skipUnless(HAVE_MATPLOTLIB, "python3-matplotlib is not installed")
    def test_bad_table_exits_1(self):
        support.write_text(self.table, "0.1\tx\t0.1\t29\n")
        run = support.run_tool("plot_messages_per_walk.py", self.table, "--output", self.png)
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"{self.table}:1: a column is not a number", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
