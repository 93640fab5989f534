#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Plots measured messages per walk against Theorem 4.2 of the FedWalk paper.

Input: a TSV with the columns
    p  measured_mean  measured_stderr  theorem
(one row per triggering probability p; an optional header line with exactly
these names; lines starting with '#' are comments). Output: a PNG with the
measurement as points with +-1.96 stderr bars and the 'theorem' column as a
line. With --length L the paper's Eq. 21 and the exact expectation of its
recurrence (Eq. 19; see theorem42.py for why they differ) are drawn too as
smooth curves over p.

Example:
  server/tools/plot_messages_per_walk.py messages.tsv --output messages.png --length 40

Exit codes: 0 ok, 1 bad input file, 2 bad arguments, 3 python3-matplotlib
missing. The shebang is Debian's interpreter, which sees python3-matplotlib.
"""

import argparse
import math
import sys

# Keeps the source tree free of __pycache__ folders next to the tools.
sys.dont_write_bytecode = True

from cli_support import EXIT_INPUT, InputError, fail, import_or_exit
import theorem42

PROG = "plot_messages_per_walk"
COLUMNS = ("p", "measured_mean", "measured_stderr", "theorem")


def read_table(path):
    """Returns the rows as tuples of floats (p, mean, stderr, theorem), sorted by p."""
    rows = []
    try:
        f = open(path, "r", encoding="utf-8")
    except OSError as e:
        raise InputError(path, None, f"cannot open: {e.strerror}") from None
    with f:
        for line_no, text in enumerate(f, start=1):
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            fields = text.split()
            if not rows and tuple(fields) == COLUMNS:
                continue  # header line
            if len(fields) != len(COLUMNS):
                raise InputError(path, line_no, f"expected {len(COLUMNS)} columns "
                                                f"({' '.join(COLUMNS)}), got {len(fields)}")
            try:
                values = tuple(float(v) for v in fields)
            except ValueError:
                raise InputError(path, line_no, "a column is not a number "
                                                "(a header must read: " + " ".join(COLUMNS) + ")") from None
            if not all(math.isfinite(v) for v in values):
                raise InputError(path, line_no, "NaN or infinite value")
            if not 0 <= values[0] <= 1:
                raise InputError(path, line_no, f"p = {values[0]} is not in [0, 1]")
            if values[2] < 0:
                raise InputError(path, line_no, f"negative stderr {values[2]}")
            rows.append(values)
    if not rows:
        raise InputError(path, None, "no data rows")
    return sorted(rows)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="plot_messages_per_walk.py",
        description="PNG of measured messages per walk vs FedWalk's Theorem 4.2.",
        epilog="Exit codes: 0 ok, 1 bad input file, 2 bad arguments, 3 python3-matplotlib missing.")
    parser.add_argument("table", metavar="TSV", help="columns: " + " ".join(COLUMNS))
    parser.add_argument("--output", "-o", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--length", type=int, metavar="L",
                        help="walk length: also draw Eq. 21 and the exact Eq. 19 curve for it")
    parser.add_argument("--title", default="Messages per walk vs 2-hop predictor probability",
                        help="plot title")
    args = parser.parse_args(argv)
    if args.length is not None and args.length < 2:
        parser.error("--length must be at least 2")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    matplotlib = import_or_exit(PROG, "matplotlib", "python3-matplotlib", "needed to draw the PNG")
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    try:
        rows = read_table(args.table)
    except InputError as e:
        fail(PROG, str(e), EXIT_INPUT)
    ps = [r[0] for r in rows]

    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    if args.length is not None:
        lo, hi = min(ps), max(ps)
        if hi == lo:
            lo, hi = max(0.0, lo - 0.05), min(1.0, hi + 0.05)
        grid = [lo + (hi - lo) * i / 200 for i in range(201)]
        axes.plot(grid, [theorem42.messages_exact(args.length, p) for p in grid],
                  color="tab:green", linewidth=1.2,
                  label=f"exact expectation of Eq. 19 (l = {args.length})")
        axes.plot(grid, [theorem42.messages_eq21(args.length, p) for p in grid],
                  color="tab:gray", linestyle=":", linewidth=1.2,
                  label=f"paper's Eq. 21 (l = {args.length})")
    axes.plot(ps, [r[3] for r in rows], color="tab:orange", linestyle="--", marker="x",
              label="Theorem 4.2 ('theorem' column)")
    axes.errorbar(ps, [r[1] for r in rows], yerr=[1.96 * r[2] for r in rows],
                  fmt="o", color="tab:blue", capsize=3, markersize=4,
                  label="measured (mean, 95% interval)")
    axes.set_xlabel("triggering probability p of the 2-hop predictor")
    axes.set_ylabel("device-to-device messages per walk")
    axes.set_title(args.title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    try:
        figure.savefig(args.output, format="png")
    except OSError as e:
        fail(PROG, f"cannot write {args.output}: {e.strerror}", EXIT_INPUT)
    print(f"wrote {args.output} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
