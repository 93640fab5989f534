# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Uniform random walks as DeepWalk generates them (Perozzi et al. 2014,
Algorithm 1): gamma passes, each starting one walk of `length` vertices at
every node in a freshly shuffled order, each step moving to a uniformly drawn
neighbour.

All walks of one pass advance together as numpy arrays, which keeps the 33M
steps of BlogCatalog (gamma 80, l 40) to a few seconds in Python. A walk that
reaches a node without neighbours (only possible from an isolated start node)
stops there.
"""

import os

import numpy as np

from cli_support import InputError


def read_graph(folder):
    """Reads FOLDER/edges.tsv ('u<TAB>v', undirected, 0-based ids; self loops
    are dropped).

    Returns (indptr, indices) of the symmetric adjacency in CSR form; the node
    count is the largest id + 1.
    """
    path = os.path.join(folder, "edges.tsv")
    sources, targets = [], []
    largest = -1  # a node named only in a self-loop line still exists
    try:
        f = open(path, "r", encoding="utf-8")
    except OSError as e:
        raise InputError(path, None, f"cannot open: {e.strerror}") from None
    with f:
        for line_no, text in enumerate(f, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise InputError(path, line_no, f"expected 'u<TAB>v', got {len(fields)} fields")
            try:
                u, v = int(fields[0]), int(fields[1])
            except ValueError:
                raise InputError(path, line_no, "node ids must be integers") from None
            if u < 0 or v < 0:
                raise InputError(path, line_no, "negative node id")
            largest = max(largest, u, v)
            if u == v:
                continue  # a self loop adds nothing to a walk's context
            sources.append(u)
            targets.append(v)
    if largest < 0:
        raise InputError(path, None, "no edges")
    u = np.array(sources + targets, dtype=np.int64)
    v = np.array(targets + sources, dtype=np.int64)
    count = largest + 1
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    # Duplicate edges would weight a neighbour twice; keep each pair once.
    keep = np.ones(len(u), dtype=bool)
    keep[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    u, v = u[keep], v[keep]
    indptr = np.zeros(count + 1, dtype=np.int64)
    np.add.at(indptr, u + 1, 1)
    return np.cumsum(indptr), v


def walk_passes(indptr, indices, gamma, length, seed):
    """Yields gamma arrays of shape (nodes, length); -1 pads stopped walks."""
    if gamma < 1 or length < 1:
        raise ValueError("gamma and length must be at least 1")
    rng = np.random.default_rng(seed)
    count = len(indptr) - 1
    degree = np.diff(indptr)
    for _ in range(gamma):
        walks = np.full((count, length), -1, dtype=np.int64)
        walks[:, 0] = rng.permutation(count)
        for step in range(1, length):
            current = walks[:, step - 1]
            live = current >= 0
            live[live] = degree[current[live]] > 0
            at = current[live]
            offsets = (rng.random(len(at)) * degree[at]).astype(np.int64)
            walks[live, step] = indices[indptr[at] + offsets]
        yield walks


def write_walks(path, passes):
    """Writes one walk per line (space-separated ids); returns the token count."""
    tokens = 0
    with open(path, "w", encoding="ascii") as f:
        for walks in passes:
            lines = []
            for walk in walks:
                walk = walk[walk >= 0]
                tokens += len(walk)
                lines.append(" ".join(map(str, walk.tolist())))
            f.write("\n".join(lines))
            f.write("\n")
    return tokens
