# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Readers for the two inputs of the node-classification evaluation.

* Embeddings in the word2vec text format: a header line `N d`, then N lines
  `id v1 ... vd`. The ids are the integer node ids of the dataset.
* Labels as in shared/datasets/*/labels.tsv: `node<TAB>label` per line with
  integer ids; a multi-label node has one line per label.

Both readers fail with an InputError naming the file and line, because a
half-written or mismatched file is the usual cause of a strange score.
"""

import math

import numpy as np

from cli_support import InputError


def _parse_int(path, line_no, text, what):
    try:
        value = int(text)
    except ValueError:
        raise InputError(path, line_no, f"{what} '{text}' is not an integer") from None
    if value < 0:
        raise InputError(path, line_no, f"{what} {value} is negative")
    return value


def _open(path):
    try:
        return open(path, "r", encoding="utf-8")
    except OSError as e:
        raise InputError(path, None, f"cannot open: {e.strerror}") from None


def read_embeddings(path):
    """Returns (ids, vectors): an int64 array of N node ids and an N x d
    float64 matrix whose row i belongs to ids[i]."""
    with _open(path) as f:
        try:
            lines = f.readlines()
        except UnicodeDecodeError as e:
            raise InputError(path, None, f"not UTF-8 text ({e.reason})") from None

    header_index = next((i for i, text in enumerate(lines) if text.strip()), None)
    if header_index is None:
        raise InputError(path, 1, "empty file; expected a header line 'N d'")
    header = lines[header_index].split()
    header_line = header_index + 1
    if len(header) != 2:
        raise InputError(path, header_line,
                         f"header must be 'N d' (count and dimension), got {len(header)} fields")
    count = _parse_int(path, header_line, header[0], "node count")
    dim = _parse_int(path, header_line, header[1], "dimension")
    if count == 0 or dim == 0:
        raise InputError(path, header_line, f"header '{count} {dim}' declares no vectors")

    ids = np.empty(count, dtype=np.int64)
    vectors = np.empty((count, dim), dtype=np.float64)
    first_line_of = {}
    row = 0
    for index in range(header_index + 1, len(lines)):
        fields = lines[index].split()
        if not fields:
            continue  # blank lines carry nothing; tolerate them
        line_no = index + 1
        if row == count:
            raise InputError(path, line_no, f"more vector lines than the {count} the header declares")
        if len(fields) != dim + 1:
            raise InputError(path, line_no,
                             f"expected an id and {dim} values, got {len(fields)} fields")
        node = _parse_int(path, line_no, fields[0], "node id")
        if node in first_line_of:
            raise InputError(path, line_no,
                             f"node {node} already has a vector (line {first_line_of[node]})")
        first_line_of[node] = line_no
        try:
            values = [float(v) for v in fields[1:]]
        except ValueError:
            bad = next(v for v in fields[1:] if not _is_float(v))
            raise InputError(path, line_no, f"value '{bad}' is not a number") from None
        if not all(math.isfinite(v) for v in values):
            raise InputError(path, line_no, f"node {node} has a NaN or infinite value")
        ids[row] = node
        vectors[row] = values
        row += 1
    if row != count:
        raise InputError(path, len(lines) + 1,
                         f"file ends after {row} vectors; the header declares {count}")
    return ids, vectors


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def read_labels(path):
    """Returns {node: sorted list of labels} for every labelled node."""
    labels = {}
    with _open(path) as f:
        try:
            for line_no, text in enumerate(f, start=1):
                fields = text.split()
                if not fields:
                    continue
                if len(fields) != 2:
                    raise InputError(path, line_no,
                                     f"expected 'node<TAB>label', got {len(fields)} fields")
                node = _parse_int(path, line_no, fields[0], "node id")
                label = _parse_int(path, line_no, fields[1], "label")
                labels.setdefault(node, set()).add(label)
        except UnicodeDecodeError as e:
            raise InputError(path, None, f"not UTF-8 text ({e.reason})") from None
    if not labels:
        raise InputError(path, None, "no labels in file")
    return {node: sorted(values) for node, values in sorted(labels.items())}
