#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of the embedding and label readers (server/tools/labelled_data.py):
good files parse to the right arrays, and every kind of malformed file is
refused with its file name and line number."""

import os
import tempfile
import unittest

import tools_test_support as support

import numpy as np

from cli_support import InputError
from labelled_data import read_embeddings, read_labels


class ReadersTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory(prefix="nodefl-readers-test-")
        self.path = os.path.join(self.folder.name, "file")

    def tearDown(self):
        self.folder.cleanup()

    def embeddings_error(self, text):
        support.write_text(self.path, text)
        with self.assertRaises(InputError) as caught:
            read_embeddings(self.path)
        return caught.exception

    def labels_error(self, text):
        support.write_text(self.path, text)
        with self.assertRaises(InputError) as caught:
            read_labels(self.path)
        return caught.exception

    def test_reads_embeddings_in_file_order(self):
        support.write_text(self.path, "3 2\n7 0.5 -1\n0 1e-3 2.25\n3 0 0\n")
        ids, vectors = read_embeddings(self.path)
        np.testing.assert_array_equal(ids, [7, 0, 3])
        np.testing.assert_allclose(vectors, [[0.5, -1], [1e-3, 2.25], [0, 0]])

    def test_reads_multi_label_nodes(self):
        support.write_text(self.path, "2\t5\n0\t1\n2\t3\n2\t5\n")
        self.assertEqual(read_labels(self.path), {0: [1], 2: [3, 5]})

    def test_embedding_errors_carry_the_line(self):
        cases = [
            ("", 1, "empty file"),
            ("3\n", 1, "header must be 'N d'"),
            ("x 2\n", 1, "node count 'x' is not an integer"),
            ("2 2\n0 1 2\n1 1\n", 3, "expected an id and 2 values, got 2 fields"),
            ("2 2\n0 1 2\n0 3 4\n", 3, "node 0 already has a vector (line 2)"),
            ("2 2\n0 1 2\na 3 4\n", 3, "node id 'a' is not an integer"),
            ("2 2\n0 1 2\n-1 3 4\n", 3, "node id -1 is negative"),
            ("1 2\n0 1 nan\n", 2, "node 0 has a NaN or infinite value"),
            ("1 2\n0 1 2\n1 3 4\n", 3, "more vector lines than the 1"),
            ("3 2\n0 1 2\n1 3 4\n", 4, "file ends after 2 vectors; the header declares 3"),
        ]
        for text, line, message in cases:
            with self.subTest(text=text):
                error = self.embeddings_error(text)
                self.assertEqual(error.line, line)
                self.assertIn(f"{self.path}:{line}: {message}", str(error))

    def test_label_errors_carry_the_line(self):
        cases = [
            ("0\t1\n1\n", 2, "expected 'node<TAB>label', got 1 fields"),
            ("0\t1\n1\t2\t3\n", 2, "expected 'node<TAB>label', got 3 fields"),
            ("0\tx\n", 1, "label 'x' is not an integer"),
            ("node\tlabel\n0\t1\n", 1, "node id 'node' is not an integer"),
        ]
        for text, line, message in cases:
            with self.subTest(text=text):
                error = self.labels_error(text)
                self.assertIn(f"{self.path}:{line}: {message}", str(error))
        self.assertIn("no labels", str(self.labels_error("\n")))

    def test_missing_file_is_an_input_error(self):
        with self.assertRaisesRegex(InputError, "cannot open"):
            read_embeddings(os.path.join(self.folder.name, "absent.emb"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
