#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Plots CDFs of per-device workloads, in the manner of Lumos Fig. 7.

A device's workload is the number of tree edges it keeps after trimming;
before trimming it is its degree. Each curve shows, for every workload x,
the share of devices whose workload is at most x, so a curve further to the
left and reaching 1 sooner means a lighter and better balanced load.

Inputs:
  --graph DIR            a dataset in the shared TSV layout (DIR/edges.tsv,
                         one undirected edge 'u<TAB>v' per line); its degrees
                         are drawn as "untrimmed (degree)"
  --series LABEL=PATH:COLUMN
                         one curve from a TSV with a header row, e.g. the
                         --output of nodefl-lumos-trim-reference (columns
                         vertex greedy mcmc exact rounds threshold); repeat
                         for several curves

Example:
  build/host/bin/nodefl-lumos-trim-reference --graph ../shared/datasets/lastfm \\
      --mcmc-iterations 300 --skip-rounds --output /tmp/lastfm-wl.tsv
  server/tools/plot_workload_cdf.py --graph ../shared/datasets/lastfm \\
      --series greedy=/tmp/lastfm-wl.tsv:greedy --series MCMC=/tmp/lastfm-wl.tsv:mcmc \\
      --series threshold=/tmp/lastfm-wl.tsv:threshold --logx --output /tmp/lastfm-cdf.png

Exit codes: 0 ok, 1 bad input data (the message names file and line),
2 bad arguments (including a missing file or column, or an output that
cannot be written), 3 python3-matplotlib missing. The shebang is Debian's
interpreter, which sees python3-matplotlib.
"""

import argparse
import math
import os
import sys

# Keeps the source tree free of __pycache__ folders next to the tools.
sys.dont_write_bytecode = True

from cli_support import EXIT_INPUT, InputError, fail, import_or_exit

PROG = "plot_workload_cdf"
EXIT_ARGS = 2


class ArgumentFileError(Exception):
    """A file or column named on the command line does not exist: exit 2,
    since the fix is to the command, not to the data."""


def open_text(path):
    try:
        return open(path, "r", encoding="utf-8")
    except FileNotFoundError:
        raise ArgumentFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ArgumentFileError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise ArgumentFileError(f"{path}: cannot open: {e.strerror}") from None


def max_node_id(path, columns_used):
    """Largest id in the first column of a 'node<TAB>...' file, or -1.

    Only labels.tsv/features.tsv are read this way: a node without edges
    still is a device (workload 0) and should count in the CDF.
    """
    largest = -1
    with open_text(path) as f:
        for line_no, text in enumerate(f, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) < columns_used:
                raise InputError(path, line_no, f"expected at least {columns_used} columns")
            try:
                node = int(fields[0])
            except ValueError:
                raise InputError(path, line_no, f"node id '{fields[0]}' is not an integer") from None
            if node < 0:
                raise InputError(path, line_no, f"negative node id {node}")
            largest = max(largest, node)
    return largest


def read_degrees(directory):
    """Degrees of every node of the dataset in `directory` (edges.tsv)."""
    if not os.path.isdir(directory):
        raise ArgumentFileError(f"{directory}: not a directory (expected a dataset folder with edges.tsv)")
    edges_path = os.path.join(directory, "edges.tsv")
    degree = []
    with open_text(edges_path) as f:
        for line_no, text in enumerate(f, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise InputError(edges_path, line_no, f"expected 'u<TAB>v', got {len(fields)} columns")
            try:
                u, v = int(fields[0]), int(fields[1])
            except ValueError:
                raise InputError(edges_path, line_no, "a node id is not an integer") from None
            if u < 0 or v < 0:
                raise InputError(edges_path, line_no, "negative node id")
            if u == v:
                raise InputError(edges_path, line_no, f"self loop at {u}")
            top = max(u, v)
            if top >= len(degree):
                degree.extend([0] * (top + 1 - len(degree)))
            degree[u] += 1
            degree[v] += 1
    # Nodes after the last one with an edge exist only in the other files.
    largest = len(degree) - 1
    for name in ("labels.tsv", "features.tsv"):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            largest = max(largest, max_node_id(path, 2))
    degree.extend([0] * (largest + 1 - len(degree)))
    if not degree:
        raise InputError(edges_path, None, "no nodes")
    return degree


def read_column(path, column):
    """The values of `column` (a header name) in a TSV with a header row."""
    with open_text(path) as f:
        header_line = f.readline()
        if not header_line:
            raise InputError(path, 1, "empty file (expected a header row)")
        header = header_line.rstrip("\r\n").split("\t")
        if column not in header:
            raise ArgumentFileError(f"{path}: no column '{column}' (header: {' '.join(h for h in header if h)})")
        index = header.index(column)
        values = []
        empty = 0
        for line_no, text in enumerate(f, start=2):
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            fields = text.split("\t")
            if index >= len(fields) or not fields[index].strip():
                empty += 1
                continue
            cell = fields[index].strip()
            try:
                value = float(cell)
            except ValueError:
                raise InputError(path, line_no, f"column '{column}': '{cell}' is not a number") from None
            if not math.isfinite(value) or value < 0:
                raise InputError(path, line_no, f"column '{column}': {cell} is not a workload (finite, >= 0)")
            values.append(value)
    if empty and not values:
        # nodefl-lumos-trim-reference leaves the rounds column empty under
        # --skip-rounds: say so rather than "no data".
        raise ArgumentFileError(f"{path}: column '{column}' is empty in every row (was that method skipped?)")
    if empty:
        raise InputError(path, None, f"column '{column}' is empty in {empty} rows but not in the others")
    if not values:
        raise InputError(path, None, "no data rows")
    return values


def parse_series(spec):
    """'LABEL=PATH:COLUMN' -> (label, path, column). The column is after the
    last ':' so that a path may itself contain ':'."""
    label, sep, rest = spec.partition("=")
    path, sep2, column = rest.rpartition(":")
    if not sep or not sep2 or not label or not path or not column:
        raise argparse.ArgumentTypeError(f"'{spec}' is not LABEL=PATH:COLUMN")
    return label, path, column


def cdf_points(values):
    """(x, share of values <= x) at each distinct value, for a step plot."""
    ordered = sorted(values)
    xs, ys = [], []
    n = len(ordered)
    for i, x in enumerate(ordered):
        if i + 1 < n and ordered[i + 1] == x:
            continue
        xs.append(x)
        ys.append((i + 1) / n)
    return xs, ys


def format_number(x):
    return str(int(x)) if float(x).is_integer() else f"{x:.3g}"


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="plot_workload_cdf.py",
        description="PNG of per-device workload CDFs (Lumos Fig. 7 style): untrimmed degrees "
                    "and any number of trimming methods' workloads.",
        epilog="Exit codes: 0 ok, 1 bad input data, 2 bad arguments (missing file or column), "
               "3 python3-matplotlib missing.")
    parser.add_argument("--graph", metavar="DIR",
                        help="dataset folder with edges.tsv: draws its degrees as 'untrimmed (degree)'")
    parser.add_argument("--series", metavar="LABEL=PATH:COLUMN", action="append", default=[],
                        type=parse_series,
                        help="a curve from column COLUMN (a header name) of the TSV at PATH; repeatable")
    parser.add_argument("--output", "-o", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--title", default="CDF of per-device workload", help="plot title")
    parser.add_argument("--logx", action="store_true",
                        help="logarithmic workload axis (symmetric-log: linear below 1, so workload 0 stays visible)")
    args = parser.parse_args(argv)
    if args.graph is None and not args.series:
        parser.error("nothing to plot: give --graph and/or at least one --series")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Read everything before importing matplotlib: a wrong path should fail
    # fast and without the dependency.
    curves = []  # (label, values)
    try:
        if args.graph is not None:
            curves.append(("untrimmed (degree)", read_degrees(args.graph)))
        for label, path, column in args.series:
            curves.append((label, read_column(path, column)))
    except ArgumentFileError as e:
        fail(PROG, str(e), EXIT_ARGS)
    except InputError as e:
        fail(PROG, str(e), EXIT_INPUT)

    # A series over a different set of devices than the graph is probably the
    # wrong file; still plotted (CDFs are shares), but said.
    if args.graph is not None:
        devices = len(curves[0][1])
        for label, values in curves[1:]:
            if len(values) != devices:
                print(f"{PROG}: warning: series '{label}' has {len(values)} devices, the graph {devices}",
                      file=sys.stderr)

    matplotlib = import_or_exit(PROG, "matplotlib", "python3-matplotlib", "needed to draw the PNG")
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    drawn = 0
    for i, (label, values) in enumerate(curves):
        xs, ys = cdf_points(values)
        # Start each curve at share 0 at its smallest value, so the first
        # step is drawn as a rise rather than starting mid-air.
        xs = [xs[0]] + xs
        ys = [0.0] + ys
        if args.graph is not None and i == 0:
            style = {"color": "black", "linestyle": "--", "linewidth": 1.4}
        else:
            # Methods often coincide over most devices (greedy and a short
            # MCMC chain differ only in the tail): each later curve is
            # thinner, so the ones under it still show at its edges.
            style = {"linewidth": max(1.0, 3.2 - 0.7 * drawn)}
            drawn += 1
        axes.step(xs, ys, where="post",
                  label=f"{label}: max {format_number(max(values))}, mean {sum(values) / len(values):.2f}", **style)
    if args.logx:
        axes.set_xscale("symlog", linthresh=1)
        # Plain numbers (0, 1, 10, 100) read faster than 10^k next to a 0.
        axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_number(x)))
    axes.set_xlabel("workload (tree edges kept by the device)")
    axes.set_ylabel("share of devices with workload <= x")
    axes.set_ylim(0, 1.02)
    axes.set_title(args.title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    try:
        figure.savefig(args.output, format="png")
    except OSError as e:
        fail(PROG, f"cannot write {args.output}: {e.strerror}", EXIT_ARGS)
    print(f"wrote {args.output} ({len(curves)} curves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
