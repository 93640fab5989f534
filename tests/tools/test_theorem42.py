#!/usr/bin/python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Tests of server/tools/theorem42.py: the recurrence of the proof (Eq. 19),
its exact closed form, the paper's printed closed form (Eq. 21), and a Monte
Carlo simulation of the walk that decides between them."""

import random
import unittest

import tools_test_support  # noqa: F401  (import path)

from theorem42 import messages_eq21, messages_exact, messages_recurrence, messages_saved

PS = [0.0, 0.05, 0.2, 0.5, 0.8, 1.0]


def simulated_messages(length, p, walks, rng):
    """Mean messages of `walks` simulated walks: from each position, with
    probability p (and at least two positions left) one message jumps two
    positions, otherwise one message moves one position."""
    total = 0
    for _ in range(walks):
        position, messages = 1, 0
        while position < length:
            step = 2 if length - position >= 2 and rng.random() < p else 1
            position += step
            messages += 1
        total += messages
    return total / walks


class Theorem42Test(unittest.TestCase):
    def test_start_values_of_the_recurrence(self):
        for p in PS:
            self.assertEqual(messages_recurrence(1, p), 0.0)
            self.assertEqual(messages_recurrence(2, p), 1.0)
            self.assertAlmostEqual(messages_recurrence(3, p), 2 - p)

    def test_exact_closed_form_agrees_with_the_recurrence(self):
        for p in PS:
            for length in range(1, 81):
                with self.subTest(p=p, length=length):
                    self.assertAlmostEqual(messages_exact(length, p),
                                           messages_recurrence(length, p), places=9)

    def test_no_predictor_means_one_message_per_hop(self):
        for length in (2, 10, 40):
            self.assertAlmostEqual(messages_exact(length, 0.0), length - 1)
        for length in (3, 10, 40):  # Eq. 21 holds from l = 3 at p = 0
            self.assertAlmostEqual(messages_eq21(length, 0.0), length - 1)

    def test_paper_value_for_fedwalk_settings(self):
        # l = 40, p = 0.2 (FedWalk, Sec. 5.1): Eq. 21 as printed gives 32.3.
        self.assertAlmostEqual(messages_eq21(40, 0.2), 32.3056, places=3)
        self.assertAlmostEqual(messages_exact(40, 0.2), 32.6389, places=3)
        self.assertAlmostEqual(messages_saved(40, 0.2, exact=False), 6.6944, places=3)

    def test_eq21_obeys_eq19_from_l4_but_is_offset_by_2p_over_1_plus_p(self):
        for p in (0.2, 0.5):
            for length in range(4, 41):
                step = (p * (messages_eq21(length - 2, p) + 1)
                        + (1 - p) * (messages_eq21(length - 1, p) + 1))
                self.assertAlmostEqual(messages_eq21(length, p), step, places=9)
            self.assertAlmostEqual(messages_exact(60, p) - messages_eq21(60, p),
                                   2 * p / (1 + p), places=9)
        self.assertEqual(messages_eq21(2, 0.3), 0.0)  # the proof's E_2 is 1

    def test_simulated_walks_match_the_recurrence_not_eq21(self):
        rng = random.Random(42)
        mean = simulated_messages(40, 0.2, 20000, rng)
        # Messages per walk have std < 2 here, so the mean's std is < 0.015.
        self.assertAlmostEqual(mean, messages_exact(40, 0.2), delta=0.06)
        self.assertGreater(abs(mean - messages_eq21(40, 0.2)), 0.25)

    def test_rejects_bad_arguments(self):
        with self.assertRaises(ValueError):
            messages_exact(0, 0.2)
        with self.assertRaises(ValueError):
            messages_recurrence(10, 1.5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
