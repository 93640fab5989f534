#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Scores node embeddings with the DeepWalk node-classification protocol.

For each training ratio and each of S shuffles of the labelled nodes:
one-vs-rest logistic regression (liblinear) on the training share, top-k
prediction on the rest (k = the node's true label count), Micro- and
Macro-F1. Prints mean +- standard deviation over the shuffles per ratio.

Example (FedWalk paper, Sec. 5):
  server/tools/score_embeddings.py --embeddings blogcatalog.emb \\
      --labels ../shared/datasets/blogcatalog/labels.tsv --ratios 0.1,0.5,0.9

Exit codes: 0 ok, 1 bad input file, 2 bad arguments, 3 python3-sklearn missing.
The shebang is Debian's interpreter on purpose: python3-sklearn is a Debian
package, which a pyenv or virtualenv python3 earlier on PATH does not see.
"""

import argparse
import json
import sys

# Keeps the source tree free of __pycache__ folders next to the tools.
sys.dont_write_bytecode = True

from cli_support import EXIT_INPUT, InputError, fail, import_or_exit, warn

PROG = "score_embeddings"
DEFAULT_RATIOS = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"


def parse_ratios(text):
    try:
        ratios = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None
    if not ratios:
        raise argparse.ArgumentTypeError("no ratio given")
    for ratio in ratios:
        if not 0 < ratio < 1:
            raise argparse.ArgumentTypeError(f"ratio {ratio} is not strictly between 0 and 1")
    return ratios


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="score_embeddings.py",
        description="Multi-label node classification with the DeepWalk protocol "
                    "(one-vs-rest logistic regression, top-k prediction, Micro/Macro-F1).",
        epilog="Exit codes: 0 ok, 1 bad input file, 2 bad arguments, 3 python3-sklearn missing.")
    parser.add_argument("--embeddings", required=True, metavar="FILE",
                        help="embeddings in word2vec text format: 'N d', then 'id v1 ... vd' per line")
    parser.add_argument("--labels", required=True, metavar="FILE",
                        help="labels.tsv: 'node<TAB>label' per line, one line per label of a node")
    parser.add_argument("--ratios", type=parse_ratios, default=parse_ratios(DEFAULT_RATIOS),
                        metavar="R1,R2,...",
                        help=f"training ratios, each in (0, 1) (default {DEFAULT_RATIOS})")
    parser.add_argument("--shuffles", type=positive_int, default=10, metavar="S",
                        help="random splits per ratio (default 10)")
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the splits (default 0)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    parser.add_argument("--threads", type=positive_int, default=1, metavar="N",
                        help="processes for the per-label classifiers (default 1)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="drop labelled nodes without an embedding instead of failing")
    return parser.parse_args(argv)


def matched_nodes(embedded_ids, labels_of, allow_missing):
    """The labelled nodes to score, in id order; fails or drops (with a
    notice) labelled nodes that have no embedding."""
    embedded = set(int(node) for node in embedded_ids)
    missing = [node for node in labels_of if node not in embedded]
    if missing and not allow_missing:
        examples = ", ".join(str(node) for node in missing[:5])
        fail(PROG, f"{len(missing)} of {len(labels_of)} labelled nodes have no embedding "
                   f"(e.g. {examples}); pass --allow-missing to drop them")
    if missing:
        warn(PROG, f"dropping {len(missing)} of {len(labels_of)} labelled nodes "
                   f"without an embedding (--allow-missing)")
    nodes = [node for node in labels_of if node in embedded]
    if not nodes:
        fail(PROG, "no labelled node has an embedding")
    unlabelled = len(embedded) - len(nodes)
    if unlabelled:
        warn(PROG, f"ignoring {unlabelled} embedded nodes without a label")
    return nodes


def format_table(results):
    lines = [f"{'ratio':>5}  {'train':>6}  {'test':>6}  {'Micro-F1 (mean +- std)':>22}  "
             f"{'Macro-F1 (mean +- std)':>22}"]
    for r in results:
        lines.append(f"{r.ratio:5.2f}  {r.train_size:6d}  {r.test_size:6d}  "
                     f"{r.micro_mean:13.4f} +- {r.micro_std:.4f}  "
                     f"{r.macro_mean:13.4f} +- {r.macro_std:.4f}")
    return "\n".join(lines)


def results_json(args, nodes, label_values, dim, results):
    return {
        "embeddings": args.embeddings,
        "labels": args.labels,
        "nodes": len(nodes),
        "label_count": len(label_values),
        "dim": dim,
        "shuffles": args.shuffles,
        "seed": args.seed,
        "classifier": "OneVsRestClassifier(LogisticRegression(solver='liblinear'))",
        "prediction": "top-k per node, k = true label count",
        "std": "sample standard deviation over shuffles (ddof=1)",
        "results": [{
            "ratio": r.ratio,
            "train_size": r.train_size,
            "test_size": r.test_size,
            "micro_f1_mean": r.micro_mean,
            "micro_f1_std": r.micro_std,
            "macro_f1_mean": r.macro_mean,
            "macro_f1_std": r.macro_std,
            "micro_f1": r.micro_f1,
            "macro_f1": r.macro_f1,
            "seconds": round(r.seconds, 3),
        } for r in results],
    }


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import_or_exit(PROG, "numpy", "python3-numpy")
    import_or_exit(PROG, "sklearn", "python3-sklearn")
    # Only now: these import numpy and sklearn at module level.
    from deepwalk_protocol import evaluate, label_matrix
    from labelled_data import read_embeddings, read_labels

    try:
        labels_of = read_labels(args.labels)
        ids, vectors = read_embeddings(args.embeddings)
    except InputError as e:
        fail(PROG, str(e), EXIT_INPUT)

    nodes = matched_nodes(ids, labels_of, args.allow_missing)
    row_of = {int(node): i for i, node in enumerate(ids)}
    x = vectors[[row_of[node] for node in nodes]]
    label_values = sorted({label for node in nodes for label in labels_of[node]})
    y = label_matrix(nodes, labels_of, label_values)
    multi = int((y.sum(axis=1) > 1).sum())
    warn(PROG, f"{len(nodes)} labelled nodes, {len(label_values)} labels "
               f"({multi} nodes with several), d={vectors.shape[1]}; "
               f"{len(args.ratios)} ratios x {args.shuffles} shuffles")

    def progress(result):
        warn(PROG, f"ratio {result.ratio:.2f}: Micro-F1 {result.micro_mean:.4f}, "
                   f"Macro-F1 {result.macro_mean:.4f} ({len(result.micro_f1)} shuffles, "
                   f"{result.seconds:.1f} s)")

    try:
        results = evaluate(x, y, args.ratios, args.shuffles, seed=args.seed,
                           threads=args.threads, on_ratio_done=progress)
    except ValueError as e:
        fail(PROG, str(e), EXIT_INPUT)

    print(format_table(results), flush=True)
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(results_json(args, nodes, label_values, vectors.shape[1], results), f,
                          indent=2)
                f.write("\n")
        except OSError as e:
            fail(PROG, f"cannot write {args.json}: {e.strerror}", EXIT_INPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
