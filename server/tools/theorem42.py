# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Expected device-to-device messages per random walk with FedWalk's 2-hop
neighbour predictor (seed paper, Theorem 4.2 and its proof, Appendix A.2).

A walk visits l vertices. Each hop is one message, except that with the
triggering probability p the current device contacts a predicted 2-hop
neighbour directly, covering two positions of the walk with one message. The
proof sets up

    E_1 = 0,  E_2 = 1,  E_l = p (E_{l-2} + 1) + (1 - p)(E_{l-1} + 1)   (Eq. 19)

and states the closed form

    E_l = (l-2)/(1+p) + (2 - 2p - 1/(1+p)) (1 - (-p)^(l-2)) / (1+p)    (Eq. 21).

Note: Eq. 21 as printed does not meet the proof's own start values: it gives
E_2 = 0 instead of 1 and E_3 = 2 - 2p instead of 2 - p. It follows the same
recurrence, so it differs from Eq. 19 by a constant plus a term decaying like
(-p)^l, and for long walks undercounts by 2p/(1+p) messages (0.33 at p = 0.2;
E_40 is 32.31 by Eq. 21 and 32.64 by Eq. 19). Solving Eq. 19 with its start
values gives

    E_l = 1 + (l-2)/(1+p) - p^2 (1 - (-p)^(l-2)) / (1+p)^2             (exact)

which messages_exact() computes. Both are provided so that a measurement can
be compared with the paper's formula and with the exact expectation.
"""


def _check(length, p):
    if int(length) != length or length < 1:
        raise ValueError(f"walk length must be an integer >= 1, got {length}")
    if not 0 <= p <= 1:
        raise ValueError(f"probability p must be in [0, 1], got {p}")


def messages_eq21(length, p):
    """Eq. 21 of the paper exactly as printed (used for l >= 2)."""
    _check(length, p)
    decay = 1 - (-p) ** (length - 2)
    return (length - 2) / (1 + p) + (2 - 2 * p - 1 / (1 + p)) * decay / (1 + p)


def messages_recurrence(length, p):
    """E_l from the recurrence Eq. 19 with E_1 = 0, E_2 = 1."""
    _check(length, p)
    if length == 1:
        return 0.0
    before, current = 0.0, 1.0  # E_{l-2}, E_{l-1} while iterating
    for _ in range(3, length + 1):
        before, current = current, p * (before + 1) + (1 - p) * (current + 1)
    return current


def messages_exact(length, p):
    """Closed-form solution of Eq. 19 (equal to messages_recurrence)."""
    _check(length, p)
    if length == 1:
        return 0.0
    return 1 + (length - 2) / (1 + p) - p * p * (1 - (-p) ** (length - 2)) / (1 + p) ** 2


def messages_saved(length, p, exact=True):
    """Messages saved per walk against p = 0 (l - 1 messages), Eq. 22."""
    expected = messages_exact(length, p) if exact else messages_eq21(length, p)
    return length - 1 - expected
