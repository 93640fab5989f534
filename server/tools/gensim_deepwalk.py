#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""DeepWalk baseline with gensim's Word2Vec, for comparing nodefl's own
SkipGram (server/fedwalk/skipgram) against a well-known implementation.

Trains SkipGram with negative sampling (sg=1, negative=5, min_count=0,
epochs=1, learning rate decaying linearly from 0.025 to 0.0001, frequent-token
subsampling off as in nodefl's SkipGramOptions) on walks read from a file
(one walk per line, space-separated node ids) or generated here with uniform
DeepWalk walks, and writes word2vec text embeddings for score_embeddings.py.

Examples:
  server/tools/gensim_deepwalk.py --walks walks.txt --output deepwalk.emb
  server/tools/gensim_deepwalk.py --walks-from-graph ../shared/datasets/blogcatalog \\
      --gamma 80 --length 40 --seed 1 --output deepwalk.emb

Exit codes: 0 ok, 1 bad input, 2 bad arguments, 3 python3-gensim missing.
The shebang is Debian's interpreter, which sees python3-gensim.
"""

import argparse
import os
import sys

# Keeps the source tree free of __pycache__ folders next to the tools.
sys.dont_write_bytecode = True
import tempfile
import time

from cli_support import EXIT_INPUT, InputError, fail, import_or_exit, warn

PROG = "gensim_deepwalk"


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="gensim_deepwalk.py",
        description="DeepWalk embeddings with gensim Word2Vec (SkipGram, negative sampling).",
        epilog="Exit codes: 0 ok, 1 bad input, 2 bad arguments, 3 python3-gensim missing.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--walks", metavar="FILE", help="walk file: one walk per line, space-separated ids")
    source.add_argument("--walks-from-graph", metavar="DIR",
                        help="generate uniform walks on DIR/edges.tsv instead")
    parser.add_argument("--gamma", type=positive_int, default=80, help="walks per node (default 80)")
    parser.add_argument("--length", type=positive_int, default=40,
                        help="vertices per walk (default 40)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the walks and of gensim's initial vectors (default 1)")
    parser.add_argument("--write-walks", metavar="FILE",
                        help="with --walks-from-graph: keep the generated walks in FILE")
    parser.add_argument("--output", "-o", required=True, metavar="EMB",
                        help="embeddings to write (word2vec text format)")
    parser.add_argument("--dim", type=positive_int, default=128, help="vector size (default 128)")
    parser.add_argument("--window", type=positive_int, default=10, help="window (default 10)")
    parser.add_argument("--negative", type=positive_int, default=5,
                        help="negative samples (default 5)")
    parser.add_argument("--epochs", type=positive_int, default=1, help="epochs (default 1)")
    parser.add_argument("--workers", type=positive_int, default=2,
                        help="training threads (default 2)")
    parser.add_argument("--alpha", type=non_negative_float, default=0.025,
                        help="initial learning rate (default 0.025)")
    parser.add_argument("--min-alpha", type=non_negative_float, default=0.0001,
                        help="final learning rate (default 0.0001)")
    parser.add_argument("--sample", type=non_negative_float, default=0.0,
                        help="subsampling threshold, 0 = off (default 0; gensim's own default is 1e-3)")
    parser.add_argument("--mode", choices=("corpus-file", "iterable"), default="corpus-file",
                        help="how gensim reads the walks: corpus-file (default; its fastest mode, "
                             "each worker reads its own part of the file) or iterable (one reader "
                             "feeding the workers). They differ in the learning rate: in corpus-file "
                             "mode each of W workers measures its progress against the whole corpus, "
                             "so its rate decays only to alpha - (alpha - min_alpha) / W; iterable mode "
                             "decays to min_alpha")
    args = parser.parse_args(argv)
    if args.write_walks and not args.walks_from_graph:
        parser.error("--write-walks needs --walks-from-graph")
    if args.min_alpha > args.alpha:
        parser.error("--min-alpha must not exceed --alpha")
    return args


def generate_walk_file(args, path):
    """Writes uniform DeepWalk walks on the graph to `path`; returns tokens."""
    import_or_exit(PROG, "numpy", "python3-numpy")
    from uniform_walks import read_graph, walk_passes, write_walks

    try:
        indptr, indices = read_graph(args.walks_from_graph)
    except InputError as e:
        fail(PROG, str(e), EXIT_INPUT)
    started = time.monotonic()
    tokens = write_walks(path, walk_passes(indptr, indices, args.gamma, args.length, args.seed))
    warn(PROG, f"generated {args.gamma} x {len(indptr) - 1} walks of up to {args.length} vertices "
               f"({tokens} tokens) in {time.monotonic() - started:.1f} s")
    return tokens


def check_walk_file(path):
    """Fails early, with a line number, on a walk file gensim would misread."""
    try:
        f = open(path, "r", encoding="utf-8")
    except OSError as e:
        fail(PROG, f"{path}: cannot open: {e.strerror}", EXIT_INPUT)
    walks = 0
    with f:
        try:
            for line_no, text in enumerate(f, start=1):
                fields = text.split()
                if not fields:
                    continue
                for token in fields:
                    if not token.isdigit():
                        fail(PROG, f"{path}:{line_no}: '{token}' is not a node id", EXIT_INPUT)
                walks += 1
        except UnicodeDecodeError as e:
            fail(PROG, f"{path}: not UTF-8 text ({e.reason})", EXIT_INPUT)
    if walks == 0:
        fail(PROG, f"{path}: no walks", EXIT_INPUT)


def train(args, walk_path):
    gensim_models = import_or_exit(PROG, "gensim.models", "python3-gensim",
                                   "needed for the gensim DeepWalk baseline")
    started = time.monotonic()
    settings = dict(sg=1, hs=0, negative=args.negative, window=args.window, vector_size=args.dim,
                    min_count=0, sample=args.sample, workers=args.workers, epochs=args.epochs,
                    alpha=args.alpha, min_alpha=args.min_alpha, seed=args.seed)
    if args.mode == "corpus-file":
        # corpus_file lets gensim's workers read the file without the GIL:
        # its fastest mode. Each worker compares the words it trained with
        # the whole corpus's count, so with W workers the learning rate ends
        # at alpha - (alpha - min_alpha) / W, not at min_alpha (--mode).
        model = gensim_models.Word2Vec(corpus_file=walk_path, **settings)
    else:
        word2vec = import_or_exit(PROG, "gensim.models.word2vec", "python3-gensim")
        model = gensim_models.Word2Vec(sentences=word2vec.LineSentence(walk_path), **settings)
    seconds = time.monotonic() - started
    model.wv.save_word2vec_format(args.output)
    tokens = model.corpus_total_words * args.epochs
    print(f"tokens {tokens}  seconds {seconds:.1f}  tokens/s {tokens / max(seconds, 1e-9):.0f}  "
          f"vectors {len(model.wv)}  -> {args.output}", flush=True)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Check gensim before spending time on walks.
    import_or_exit(PROG, "gensim", "python3-gensim", "needed for the gensim DeepWalk baseline")
    if args.walks:
        check_walk_file(args.walks)
        train(args, args.walks)
        return 0
    if args.write_walks:
        generate_walk_file(args, args.write_walks)
        train(args, args.write_walks)
        return 0
    with tempfile.TemporaryDirectory(prefix="nodefl-walks-") as folder:
        path = os.path.join(folder, "walks.txt")
        generate_walk_file(args, path)
        train(args, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
