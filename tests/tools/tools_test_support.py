# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Shared set-up for the tests of server/tools: the import path, running a
tool as a subprocess with the same interpreter, and small file writers."""

import os
import subprocess
import sys

# Keeps server/tools free of __pycache__ folders when tests import the tools.
sys.dont_write_bytecode = True

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(REPO, "server", "tools")
DATASETS = os.environ.get("NODEFL_DATASETS_DIR",
                          os.path.join(REPO, "..", "shared", "datasets"))

if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)


def run_tool(script, *args, env_extra=None, timeout=120):
    """Runs server/tools/SCRIPT with this interpreter; returns CompletedProcess.

    sys.executable, not the shebang: ctest picks the interpreter that has the
    Debian packages, and the tools must behave the same under it.
    """
    env = dict(os.environ)
    if env_extra:
        env.update(env_extra)
    return subprocess.run([sys.executable, os.path.join(TOOLS, script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def write_embeddings(path, ids, vectors, header=None):
    """word2vec text format; `header` overrides the 'N d' line (for bad files)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(header if header is not None else f"{len(ids)} {len(vectors[0])}")
        f.write("\n")
        for node, vector in zip(ids, vectors):
            f.write(f"{node} " + " ".join(f"{v:.6f}" for v in vector) + "\n")


def write_labels(path, labels_of):
    with open(path, "w", encoding="utf-8") as f:
        for node in sorted(labels_of):
            for label in labels_of[node]:
                f.write(f"{node}\t{label}\n")


def write_text(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
