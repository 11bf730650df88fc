"""The shipped Albury 2015 ballots (``pymc_crp.datasets.load_albury_ballots``).

Bad inputs are in the table of ``tests/models/test_model_inputs.py``.
"""

from collections import Counter
from importlib import resources

import pymc_crp as pmc
from pymc_crp.datasets import load_albury_ballots

NAMES = ["JACKSON Ross", "WADE Kym", "MARRA John", "APLIN Greg", "KING Niloufer"]


def test_albury_counts():
    every = load_albury_ballots(min_length=1)
    assert len(every.lists) == 46_347 and every.n_items == 5 and every.item_names == NAMES
    assert Counter(map(len, every.lists)) == {1: 27_726, 2: 3_377, 3: 324, 4: 161, 5: 14_759}
    assert len(set(map(tuple, every.lists))) == 238
    first = Counter(every.item_names[lst[0]] for lst in every.lists)
    assert first == {
        "APLIN Greg": 26_800,
        "JACKSON Ross": 14_684,
        "KING Niloufer": 2_603,
        "WADE Kym": 1_254,
        "MARRA John": 1_006,
    }
    default = load_albury_ballots()
    assert len(default.lists) == 18_621 and all(len(lst) >= 2 for lst in default.lists)
    assert len(load_albury_ballots(min_length=5).lists) == 14_759
    assert every.lists[0] == [3] and default.lists[0] == [0, 4, 2, 1, 3]  # "1,5,3,2,4"


def test_albury_licence_notice():
    notice = "© State of New South Wales through the NSW Electoral Commission"
    data = load_albury_ballots(n_ballots=10)
    assert notice in data.description and "creativecommons.org/licenses/by/4.0" in data.description
    assert "10 ballots drawn without replacement" in data.description
    text = resources.files("pymc_crp.datasets").joinpath("albury_2015.soi").read_text("utf-8")
    assert notice in text and "# FILE NAME: 00058-00000001.soi" in text
    assert notice in load_albury_ballots.__doc__.replace("\n    ", " ")


def test_albury_subsample_is_reproducible():
    a = load_albury_ballots(n_ballots=500, seed=3)
    assert len(a.lists) == 500
    assert a.lists == load_albury_ballots(n_ballots=500, seed=3).lists
    assert a.lists != load_albury_ballots(n_ballots=500, seed=4).lists
    # a subsample of the kept ballots: every drawn ballot is one of them, counts never exceed
    pool = Counter(map(tuple, load_albury_ballots().lists))
    drawn = Counter(map(tuple, a.lists))
    assert all(drawn[b] <= pool[b] for b in drawn)
    whole = load_albury_ballots(min_length=3, n_ballots=15_244, seed=0)  # all 15,244 of them
    assert sorted(whole.lists) == sorted(load_albury_ballots(min_length=3).lists)


def test_albury_builds_a_model():
    data = load_albury_ballots(n_ballots=30, seed=1)
    model = pmc.models.clustered_partial_orders(
        data.lists, data.n_items, item_names=data.item_names
    )
    assert "cluster" in model.named_vars and list(model.coords["item"]) == NAMES
