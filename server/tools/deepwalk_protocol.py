# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""The node-classification protocol of DeepWalk (Perozzi et al. 2014, Sec. 6),
which the FedWalk paper (Sec. 5.1) uses unchanged:

  for each training ratio T_R and each of S random shuffles of the labelled
  nodes, train one-vs-rest logistic regression on the first T_R share of the
  shuffle, predict the rest, and give every test node as many labels as it
  truly has (its top-k labels by predicted probability). Micro- and Macro-F1
  are averaged over the shuffles.

Giving each node exactly k = |true labels| predictions is what DeepWalk's
published scores (and node2vec's, LINE's, FedWalk's) assume; thresholding the
probabilities at 0.5 instead gives very different, lower numbers. With k
predictions per node, precision equals recall, so Micro-F1 is the share of
true (node, label) pairs that were recovered.

Like DeepWalk's scoring script, the S shuffles are drawn once and shared by
all ratios: ratio 0.5 trains on a superset of ratio 0.1's training nodes.
"""

import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier


@dataclass
class RatioResult:
    ratio: float
    train_size: int
    test_size: int
    micro_f1: list = field(default_factory=list)  # one value per shuffle
    macro_f1: list = field(default_factory=list)
    seconds: float = 0.0

    @staticmethod
    def _std(values):
        # Sample standard deviation over shuffles; 0 for a single shuffle.
        return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0

    @property
    def micro_mean(self):
        return float(np.mean(self.micro_f1))

    @property
    def micro_std(self):
        return self._std(self.micro_f1)

    @property
    def macro_mean(self):
        return float(np.mean(self.macro_f1))

    @property
    def macro_std(self):
        return self._std(self.macro_f1)


def label_matrix(nodes, labels_of, label_values):
    """Indicator matrix: row i, column j is 1 iff nodes[i] has label_values[j]."""
    column_of = {label: j for j, label in enumerate(label_values)}
    y = np.zeros((len(nodes), len(label_values)), dtype=np.int8)
    for i, node in enumerate(nodes):
        for label in labels_of[node]:
            y[i, column_of[label]] = 1
    return y


def draw_shuffles(count, shuffles, seed):
    """The permutations of the labelled nodes, drawn once for all ratios."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(count) for _ in range(shuffles)]


def split_sizes(count, ratio):
    """(train, test) sizes; DeepWalk truncates the training share."""
    train = int(ratio * count)
    return train, count - train


def predict_top_k(probabilities, k_per_row):
    """Indicator matrix with the k_per_row[i] most probable labels of row i.

    Ties are broken towards the lower label column (stable sort), so the
    result does not depend on anything but the probabilities.
    """
    probabilities = np.asarray(probabilities)
    k_per_row = np.asarray(k_per_row)
    order = np.argsort(-probabilities, axis=1, kind="stable")
    predicted = np.zeros(probabilities.shape, dtype=np.int8)
    for i, k in enumerate(k_per_row):
        predicted[i, order[i, :k]] = 1
    return predicted


# Warning filter for the per-label training: a label absent from (or
# universal in) a small training share gets a constant predictor, and sklearn
# warns about it, which is expected here.
_CONSTANT_LABEL_WARNINGS = "ignore::UserWarning:sklearn.multiclass"


def _quiet_worker_processes():
    """joblib's worker processes do not inherit warnings filters, only the
    environment (they read PYTHONWARNINGS when they start)."""
    current = os.environ.get("PYTHONWARNINGS", "")
    if _CONSTANT_LABEL_WARNINGS not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [current, _CONSTANT_LABEL_WARNINGS]))


def new_classifier(threads, seed):
    # liblinear is the solver DeepWalk/node2vec evaluations used; n_jobs
    # spreads the per-label binary problems over processes.
    if threads > 1:
        _quiet_worker_processes()
    return OneVsRestClassifier(LogisticRegression(solver="liblinear", random_state=seed),
                               n_jobs=threads if threads > 1 else None)


def score_split(x_train, y_train, x_test, y_test, threads=1, seed=0):
    """Trains on one split and returns (micro_f1, macro_f1, predictions)."""
    classifier = new_classifier(threads, seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="sklearn.multiclass")
        classifier.fit(x_train, y_train)
        probabilities = classifier.predict_proba(x_test)
    predicted = predict_top_k(probabilities, y_test.sum(axis=1))
    with warnings.catch_warnings():
        # Macro-F1 counts a label with no true and no predicted test node as
        # F1 = 0, as sklearn's default (and the published evaluations) do.
        warnings.filterwarnings("ignore", category=UndefinedMetricWarning)
        micro = f1_score(y_test, predicted, average="micro", zero_division=0)
        macro = f1_score(y_test, predicted, average="macro", zero_division=0)
    return float(micro), float(macro), predicted


def evaluate(x, y, ratios, shuffles, seed=0, threads=1, on_ratio_done=None):
    """Runs the protocol; returns one RatioResult per ratio, in order.

    x: n x d features, y: n x L indicator matrix (every row has a label).
    on_ratio_done(result) is called after each ratio (progress reporting).
    """
    n = x.shape[0]
    for ratio in ratios:
        train, test = split_sizes(n, ratio)
        if train < 1 or test < 1:
            raise ValueError(f"ratio {ratio} leaves {train} training and {test} test nodes "
                             f"out of {n}; both need at least one")
    permutations = draw_shuffles(n, shuffles, seed)
    results = []
    for ratio in ratios:
        train, test = split_sizes(n, ratio)
        result = RatioResult(ratio=ratio, train_size=train, test_size=test)
        started = time.monotonic()
        for permutation in permutations:
            train_rows, test_rows = permutation[:train], permutation[train:]
            micro, macro, _ = score_split(x[train_rows], y[train_rows], x[test_rows], y[test_rows],
                                          threads=threads, seed=seed)
            result.micro_f1.append(micro)
            result.macro_f1.append(macro)
        result.seconds = time.monotonic() - started
        results.append(result)
        if on_ratio_done is not None:
            on_ratio_done(result)
    return results
