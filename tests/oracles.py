"""Independent oracles shared by the tests: brute-force enumeration and closed forms.

Written from the formulas in DESIGN.md with the standard library only, so that they do not
share code with the package.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def set_partitions(n: int):
    """All set partitions of ``range(n)`` as lists of blocks (restricted growth strings)."""

    def rec(i, blocks):
        if i == n:
            yield [list(b) for b in blocks]
            return
        for b in blocks:
            b.append(i)
            yield from rec(i + 1, blocks)
            b.pop()
        blocks.append([i])
        yield from rec(i + 1, blocks)
        blocks.pop()

    yield from rec(0, [])


def partition_labels(blocks, n: int) -> np.ndarray:
    labels = np.empty(n, dtype=np.int64)
    for k, b in enumerate(blocks):
        labels[b] = k
    return labels


def eppf(sizes, theta: float, d: float) -> float:
    """Pitman--Yor EPPF by its product form (no gamma functions)."""
    n_total = sum(sizes)
    k = len(sizes)
    num = 1.0
    for i in range(1, k):
        num *= theta + i * d
    rising = 1.0
    for i in range(1, n_total):  # (theta + 1)_{N-1}
        rising *= theta + i
    blocks = 1.0
    for s in sizes:
        for i in range(1, s):  # (1 - d)_{s-1}
            blocks *= i - d
    return num * blocks / rising


def crp_label_prob(labels, theta: float, d: float, n_slots: int) -> float:
    sizes = [int(c) for c in np.bincount(labels, minlength=n_slots) if c > 0]
    k = len(sizes)
    n_labellings = math.perm(n_slots, k)
    return eppf(sizes, theta, d) / n_labellings


def dirichlet_multinomial_label_prob(labels, gamma: float, n_groups: int) -> float:
    """Pólya-urn product: prod_i (N_a(i) + gamma/A) / (i + gamma)."""
    counts = np.zeros(n_groups)
    prob = 1.0
    alpha = gamma / n_groups
    for i, a in enumerate(labels):
        prob *= (counts[a] + alpha) / (i + gamma)
        counts[a] += 1
    return prob


def all_label_vectors(n: int, n_slots: int) -> np.ndarray:
    return np.array(list(itertools.product(range(n_slots), repeat=n)), dtype=np.int64)


def exact_cluster_count_distribution(n: int, theta: float, d: float) -> dict[int, float]:
    dist: dict[int, float] = {}
    for blocks in set_partitions(n):
        k = len(blocks)
        dist[k] = dist.get(k, 0.0) + eppf([len(b) for b in blocks], theta, d)
    return dist
