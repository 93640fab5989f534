#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Plots learning curves of Lumos training: accuracy per split by epoch.

Inputs: one or more --series LABEL=PATH, each a TSV with a header row and
the columns 'epoch' and 'validation' and 'test' (the lumos-train job's
lumos-train-epochs.tsv, whose accuracy columns are named
validation_accuracy and test_accuracy, or nodefl-lumos-central --output,
named validation and test: either naming is read). Link prediction's
curves (the job's or nodefl-lumos-central --task link's) name them
validation_auc and test_auc; the y axis then reads ROC-AUC (a series
without a defined AUC, "nan", leaves a gap). A row whose 'train' column
is 0 (the job's evaluation epoch) is drawn as a marker.

Example:
  server/tools/plot_learning_curve.py \\
      --series "lumos paper=OUT/paper/lumos-train-epochs.tsv" \\
      --series "central=OUT/central-gcn-epochs.tsv" --output curve.png

Exit codes: 0 ok, 1 bad input data (the message names file and line),
2 bad arguments (a missing file or column, an output that cannot be
written), 3 python3-matplotlib missing.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True


def read_series(path):
    """Returns (epochs, validation, test, metric) from one TSV; metric is
    "accuracy" or "ROC-AUC"."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SystemExit(f"plot_learning_curve: cannot read {path}: {e.strerror}") from None
    if not lines:
        raise SystemExit(f"plot_learning_curve: {path}: empty")
    header = lines[0].split("\t")
    def column(*names):
        for n in names:
            if n in header:
                return header.index(n)
        return None
    ie = column("epoch")
    iv = column("validation_accuracy", "validation", "validation_auc")
    it = column("test_accuracy", "test", "test_auc")
    if ie is None or iv is None or it is None:
        print(f"plot_learning_curve: {path}: needs columns epoch, validation(_accuracy or _auc), "
              "test(_accuracy or _auc)", file=sys.stderr)
        sys.exit(2)
    metric = "ROC-AUC" if header[iv] == "validation_auc" else "accuracy"
    epochs, val, test = [], [], []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        try:
            epochs.append(int(cells[ie]))
            val.append(float(cells[iv]))
            test.append(float(cells[it]))
        except (ValueError, IndexError):
            print(f"plot_learning_curve: {path}:{n}: not a row of numbers: {line!r}", file=sys.stderr)
            sys.exit(1)
    return epochs, val, test, metric


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--series", action="append", required=True, metavar="LABEL=PATH")
    p.add_argument("--title", default="Lumos training: accuracy by epoch")
    p.add_argument("--output", required=True)
    a = p.parse_args()
    series = []
    for s in a.series:
        if "=" not in s:
            print(f"plot_learning_curve: --series expects LABEL=PATH, got {s!r}", file=sys.stderr)
            return 2
        label, path = s.split("=", 1)
        if not os.path.isfile(path):
            print(f"plot_learning_curve: {path}: no such file", file=sys.stderr)
            return 2
        series.append((label, read_series(path)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_learning_curve: python3-matplotlib is not installed", file=sys.stderr)
        return 3
    metrics = {s[1][3] for s in series}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, (epochs, val, test, _) in series:
        line, = ax.plot(epochs, test, label=f"{label}: test")
        ax.plot(epochs, val, linestyle="--", color=line.get_color(), label=f"{label}: validation")
    ax.set_xlabel("epoch")
    ax.set_ylabel(" / ".join(sorted(metrics)))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(a.title)
    try:
        fig.tight_layout()
        fig.savefig(a.output, dpi=110)
    except OSError as e:
        print(f"plot_learning_curve: cannot write {a.output}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
