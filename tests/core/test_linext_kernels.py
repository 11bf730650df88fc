"""Plumbing of the compiled linear-extension kernels (:mod:`pymc_crp.core.linext_kernels`).

Bitsets against the orders they encode, memo growth, one compilation whatever the input types,
and loading from numba's on-disk cache in a new process. What the kernels compute is tested
against independent oracles in ``test_posets.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_crp import posets as P

# ----------------------------------------------------------------------------------
# Kernel plumbing: bitsets, memo growth, one compilation, on-disk cache


def test_kernel_inputs_match_definitions():
    from pymc_crp.core import linext_support as T

    rng = np.random.default_rng(21)
    for n in (0, 1, 5, 63, 64, 65, 128):
        closed = P.random_two_dimensional_order(n, rng)
        rel, dual = T.relation_words(closed), T.relation_words(closed, dual=True)
        assert rel.shape == (4, n) and rel.dtype == np.uint64 and rel.flags.c_contiguous

        def members(lo, hi):
            return {b for b in range(64) if int(lo) >> b & 1} | {
                64 + b for b in range(64) if int(hi) >> b & 1
            }

        for x in range(n):
            assert members(rel[0, x], rel[1, x]) == set(np.flatnonzero(closed[:, x]))
            assert members(dual[0, x], dual[1, x]) == set(np.flatnonzero(closed[x]))
            comparable = set(np.flatnonzero(closed[:, x] | closed[x]))
            assert members(rel[2, x], rel[3, x]) == comparable == members(dual[2, x], dual[3, x])
        sizes = T.chain_partition_sizes(closed)
        assert sizes.sum() == n
        bound = math.factorial(n) // math.prod(math.factorial(int(c)) for c in sizes)
        if n <= 12:
            assert P.count_linear_extensions(closed) <= bound
    stack = np.stack([P.random_two_dimensional_order(9, rng) for _ in range(3)])
    np.testing.assert_array_equal(T.relation_words(stack)[1], T.relation_words(stack[1]))
    perm, starts = T.group_by_label(np.array([2, 0, 2, 1, 0]), 4)
    assert perm.tolist() == [1, 4, 3, 0, 2] and starts.tolist() == [0, 2, 3, 5, 5]


def test_memo_grows_beyond_its_initial_size():
    from pymc_crp.core import linext_kernels as K
    from pymc_crp.core import linext_support as T

    crown = P.crown_order(12)  # thousands of memoised sets, a deep search stack
    primes, binom_r = T.residue_tables(4)
    f, residues, n_states, exceeded = K.count_kernel(
        T.relation_words(crown), primes, T.float_binomials(), binom_r, 10**6
    )
    assert n_states > 8 * K._INITIAL_CAPACITY and not exceeded
    assert T.crt(residues, primes) == 13 * math.factorial(12) * math.factorial(11)
    assert f == pytest.approx(13 * math.factorial(12) * math.factorial(11), rel=1e-12)


def test_each_kernel_compiles_once_whatever_the_input_types():
    from pymc_crp.core import linext_kernels as K

    rng = np.random.default_rng(22)
    adj = P.random_two_dimensional_order(10, rng)
    frozen = adj.copy()
    frozen.flags.writeable = False
    lists = np.array([[0, 3, 5], [2, 1, -1]])
    for closed in (adj, frozen, adj.T.T, np.asfortranarray(adj)):
        P.count_linear_extensions(closed)
        P.log_count_linear_extensions(closed)
        P.sample_list(closed, [0, 4, 7], 0.2, rng, "bottom-up", size=2)
        P.sample_linear_extension(closed, rng)
        for top_down in (True, False):
            P.list_log_likelihoods_padded(closed, lists, [3, 2], 0.1, top_down, return_grad=True)
            ro_lists = lists.astype(np.int32)
            ro_lists.flags.writeable = False
            P.list_log_likelihoods_stacked(
                np.broadcast_to(closed, (2, 10, 10)), ro_lists, (3, 2), [1, 0], 1, top_down
            )
    from pymc_crp.core import linext_sampling as S
    from pymc_crp.core import linext_support as T

    kernels = (K.count_kernel, S.sample_lists_kernel, K.ratios_kernel, T.loglik_from_ratios)
    for kernel in kernels:
        assert len(kernel.signatures) == 1, kernel.signatures


def test_kernels_load_from_the_disk_cache_in_a_new_process(tmp_path):
    import subprocess
    import sys

    rng = np.random.default_rng(23)
    adj = P.random_two_dimensional_order(8, rng)
    P.count_linear_extensions(adj)  # compiled (and cached) here if not yet on disk
    P.sample_list(adj, range(8), 0.1, rng)
    P.list_log_likelihoods_padded(adj, [[0, 1, 2]], [3], 0.1)
    script = """if True:
        import numpy as np
        from pymc_crp.core import linext_kernels as K, linext_support as T, posets as P
        from pymc_crp.core import linext_sampling as S
        adj = P.crown_order(3)
        P.count_linear_extensions(adj)
        P.sample_list(adj, range(6), 0.1, np.random.default_rng(0))
        P.list_log_likelihoods_padded(adj, [[0, 1, 2]], [3], 0.1)
        kernels = (K.count_kernel, S.sample_lists_kernel, K.ratios_kernel,
                   T.loglik_from_ratios)
        print(sum(len(k.stats.cache_hits) for k in kernels),
              sum(len(k.stats.cache_misses) for k in kernels))
    """
    # Run from an empty folder: ``python -c`` puts the working directory first on sys.path,
    # and from a source checkout that would import the sources instead of this process's
    # (installed) package, whose cache is the one written above.
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        cwd=tmp_path,
    )
    hits, misses = map(int, out.stdout.split()[-2:])
    assert (hits, misses) == (4, 0), out.stdout + out.stderr


def test_utility_relation_words_match_the_dominance_orders():
    from pymc_crp.core import linext_support as T

    rng = np.random.default_rng(24)
    for m_items in (1, 7, 64, 65, 128):
        for k in (1, 2, 3):
            eta = rng.normal(size=(3, m_items, k))
            eta[0, : m_items // 2, 0] = 0.0  # ties leave items incomparable
            closed = np.all(eta[..., :, None, :] > eta[..., None, :, :], axis=-1)
            for dual in (False, True):
                got = T.utility_relation_words(eta, dual)
                np.testing.assert_array_equal(got, T.relation_words(closed, dual))
    with pytest.raises(ValueError, match="M <= 128"):
        T.utility_relation_words(np.zeros((1, 129, 2)))
    assert len(T._utility_words.signatures) == 1
