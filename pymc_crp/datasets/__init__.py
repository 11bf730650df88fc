"""Small data sets shipped with the package, and a reader for PrefLib rank data.

* :func:`load_witness_lists` — 15 witness lists of bishops in the royal charters of 1135
  (Nicholls et al., 2025), ranked lists over subsets of 16 items.
* :func:`load_albury_ballots` — 46,347 optional-preferential ballots over 5 candidates, NSW
  Legislative Assembly 2015, district of Albury (© State of New South Wales through the NSW
  Electoral Commission, CC BY 4.0; via PrefLib).
* :func:`load_galaxies` — the velocities of 82 galaxies (Roeder, 1990).
* :func:`read_preflib` — PrefLib ``.soc``, ``.soi`` and ``.toi`` files.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from pymc_crp.core.checks import integer_at_least

__all__ = [
    "RankData",
    "load_albury_ballots",
    "load_galaxies",
    "load_witness_lists",
    "read_preflib",
]


@dataclass
class RankData:
    """Ranked lists (0-based item indices, best first) with item names and a description."""

    lists: list[list[int]]
    n_items: int
    item_names: list[str] = field(default_factory=list)
    description: str = ""


def load_galaxies() -> np.ndarray:
    """The velocities (km/s) of 82 galaxies of Roeder (1990), as a float array of shape (82,).

    Roeder, K. (1990) "Density estimation with confidence sets exemplified by superclusters and
    voids in the galaxies", *JASA* 85, 617–624; the ``galaxies`` data of R's MASS package.
    Often analysed in units of 1000 km/s (divide by 1000).
    """
    text = resources.files(__name__).joinpath("galaxies.csv").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and lines[0].strip() == "velocity":
        lines = lines[1:]
    return np.loadtxt(io.StringIO("\n".join(lines)), dtype=np.float64)


def load_witness_lists() -> RankData:
    """The witness lists of the 1135 royal charters (bishops only).

    15 lists over 16 bishops; each list is the order in which bishops witnessed a charter
    (most senior first). Items are returned 0-based (bishop ``b`` is item ``b - 1``).
    The authors' reference analysis used ``K = 8``, ``ρ ~ Beta(1, 1/6)``,
    ``p ~ Beta(1, 9)``, ``β = 0``.

    References
    ----------
    .. [1] Nicholls, G. K., Lee, J. E., Karn, N., Johnson, D., Huang, R. and Muir-Watt, A.
       (2025). Bayesian inference for partial orders from random linear extensions: power
       relations from 12th century Royal Acta. *Ann. Appl. Stat.* 19(2).
    """
    text = resources.files(__name__).joinpath("witness_lists_1135.txt").read_text()
    header = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    lists = [
        [int(tok) - 1 for tok in line.split()]
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return RankData(
        lists=lists,
        n_items=16,
        item_names=[f"bishop {b}" for b in range(1, 17)],
        description="\n".join(header),
    )


_ALBURY_NOTICE = (
    "© State of New South Wales through the NSW Electoral Commission. Licensed under CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/); see https://elections.nsw.gov.au/copyright. "
    "Via PrefLib (https://www.preflib.org), data set 00058 'nswla', file 00058-00000001.soi."
)


def load_albury_ballots(
    min_length: int = 2, n_ballots: int | None = None, seed: int = 0
) -> RankData:
    """Ballots of the 2015 NSW Legislative Assembly election in the district of Albury.

    All 46,347 formal ballots of the district; each ballot ranks 1 to 5 of the 5 candidates
    (optional preferential voting: a voter numbers as many candidates as they like, best
    first). Items are the candidates in the PrefLib numbering, 0-based:

    * item 0, ``JACKSON Ross`` (Labor): 14,684 first preferences;
    * item 1, ``WADE Kym`` (Christian Democrats): 1,254;
    * item 2, ``MARRA John`` (No Land Tax): 1,006;
    * item 3, ``APLIN Greg`` (Liberal, elected): 26,800;
    * item 4, ``KING Niloufer`` (Greens): 2,603.

    List lengths: 27,726 ballots rank one candidate (18,502 of them APLIN only, 7,063
    JACKSON only), 3,377 rank two, 324 three, 161 four and 14,759 all five; 18,621 rank at
    least two. There are 238 distinct ballots. The party labels (from the published results,
    whose first-preference counts the file reproduces) are not part of the data and are given
    only to help read clusters.

    Parameters
    ----------
    min_length : int, default 2
        Keep the ballots ranking at least this many candidates, 1 to 5. A ballot naming one
        candidate says nothing about the order of the others, so it adds no order information
        to a list likelihood (it only weighs on cluster sizes); 1 keeps every ballot.
    n_ballots : int, optional
        Draw this many of the kept ballots without replacement (returned in file order), with
        ``numpy.random.default_rng(seed)``; default all of them.
    seed : int, default 0
        Seed of the subsample (the same ``seed`` and arguments give the same ballots).

    Returns
    -------
    RankData
        ``lists`` (0-based candidates, best first), ``n_items = 5``, ``item_names`` as above
        and a ``description`` holding the source, the licence notice and the selection made.

    Notes
    -----
    Source: NSW Electoral Commission, 2015 NSW State Election, Legislative Assembly, Albury,
    via PrefLib data set 00058 "nswla" (file ``00058-00000001.soi``, GitHub
    ``PrefLib/PrefLib-Data`` commit ``bf857e11d98c6738d09dc97919a46b138c47b5f9``).

    © State of New South Wales through the NSW Electoral Commission. Licensed under the
    Creative Commons Attribution 4.0 International licence (CC BY 4.0,
    https://creativecommons.org/licenses/by/4.0/; https://elections.nsw.gov.au/copyright).
    Changes: comment lines stating source and licence were added to the shipped file
    (``pymc_crp/datasets/albury_2015.soi``); this function may drop short ballots
    (``min_length``) and subsample (``n_ballots``), as recorded in ``description``. Keep the
    notice with any use of the data.

    ``examples/albury_ballots.py`` fits :func:`pymc_crp.models.clustered_partial_orders` to
    1,000 of the ballots ranking at least two candidates.

    Examples
    --------
    >>> from pymc_crp.datasets import load_albury_ballots
    >>> data = load_albury_ballots(n_ballots=1000, seed=0)
    >>> len(data.lists), data.n_items
    (1000, 5)
    """
    if isinstance(min_length, bool) or not isinstance(min_length, int | np.integer):
        raise ValueError(f"min_length must be an integer from 1 to 5, got {min_length!r}")
    if not 1 <= min_length <= 5:
        raise ValueError(f"min_length must be an integer from 1 to 5, got {min_length!r}")
    integer_at_least(seed, "seed", type_error=ValueError)
    if n_ballots is not None and (
        isinstance(n_ballots, bool) or not isinstance(n_ballots, int | np.integer) or n_ballots < 1
    ):
        raise ValueError(f"n_ballots must be a positive integer or None, got {n_ballots!r}")
    with resources.as_file(resources.files(__name__).joinpath("albury_2015.soi")) as path:
        data = read_preflib(path)
    lists = [lst for lst in data.lists if len(lst) >= min_length]
    selection = f"the {len(lists):,} ballots ranking at least {min_length} candidate(s)"
    if n_ballots is not None:
        if n_ballots > len(lists):
            raise ValueError(
                f"n_ballots={n_ballots:,} is more than the {len(lists):,} ballots ranking at "
                f"least min_length={min_length} candidates"
            )
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(lists), size=int(n_ballots), replace=False))
        lists = [lists[i] for i in keep]
        selection = (
            f"{int(n_ballots):,} ballots drawn without replacement (numpy default_rng(seed={seed}))"
            f" from {selection}"
        )
    return RankData(
        lists=lists,
        n_items=data.n_items,
        item_names=data.item_names,
        description=(
            "NSW Legislative Assembly 2015, district of Albury: ballots (source: NSW Electoral "
            f"Commission). {_ALBURY_NOTICE} Selection: {selection}."
        ),
    )


_ORDER_LINE = re.compile(r"^\s*(\d+)\s*:\s*(.+)$")


def read_preflib(path, ties: str = "error") -> RankData:
    """Read a PrefLib file of (possibly incomplete) rankings: ``.soc``, ``.soi`` or ``.toi``.

    Each data line ``count: a,b,{c,d},e`` gives ``count`` voters with that ranking (items
    are 1-based in the file and 0-based in the result; ``{…}`` is a tie). The new PrefLib
    format (``# NUMBER ALTERNATIVES:`` headers) and the legacy one are both read.

    Parameters
    ----------
    path : str or Path
    ties : {"error", "truncate"}
        Ties have no meaning for a strict list: ``"error"`` raises a ``ValueError`` naming the
        line; ``"truncate"`` keeps the strict prefix before the first tie (a shorter list
        over fewer items; the tied items and all after them are dropped).
    """
    if ties not in ("error", "truncate"):
        raise ValueError(f"ties must be 'error' or 'truncate', got {ties!r}")
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    names: dict[int, str] = {}
    n_items = None
    body = []
    for line in lines:
        if line.startswith("#"):
            m = re.match(r"#\s*NUMBER ALTERNATIVES:\s*(\d+)", line)
            if m:
                n_items = int(m.group(1))
            m = re.match(r"#\s*ALTERNATIVE NAME (\d+):\s*(.*)", line)
            if m:
                names[int(m.group(1))] = m.group(2).strip()
        elif line.strip():
            body.append(line)
    legacy = n_items is None
    if legacy:  # legacy format: n, then n lines "i,name", then a counts line
        if not body:
            raise ValueError(f"{path.name}: no header and no data lines (not a PrefLib file)")
        try:
            n_items = int(body[0].strip())
            for line in body[1 : n_items + 1]:
                idx, name = line.split(",", 1)
                names[int(idx)] = name.strip()
        except ValueError:
            raise ValueError(
                f"{path.name}: cannot read the header (neither '# NUMBER ALTERNATIVES:' nor "
                f"the legacy item count and item lines)"
            ) from None
    if n_items < 1:
        raise ValueError(f"{path.name}: the number of alternatives must be positive, got {n_items}")
    if legacy:  # "count,i1,i2,..." after the item lines and the voters line
        body = [
            ",".join(line.split(",")[:1]) + ":" + ",".join(line.split(",")[1:])
            for line in body[n_items + 2 :]
        ]
    out: list[list[int]] = []
    for number, line in enumerate(body, start=1):
        m = _ORDER_LINE.match(line)
        if not m:
            raise ValueError(f"{path.name}: cannot read data line {number}: {line!r}")
        count, ranking = int(m.group(1)), m.group(2)
        items: list[int] = []
        for token in re.findall(r"\{[^}]*\}|[^,{}\s]+", ranking):
            if token.startswith("{"):
                if ties == "error":
                    raise ValueError(
                        f"{path.name}: data line {number} has a tie {token}; strict lists are "
                        "needed (read with ties='truncate' to keep the strict prefix)"
                    )
                break
            if not token.isdigit():
                raise ValueError(f"{path.name}: data line {number} has a bad item {token!r}")
            items.append(int(token) - 1)
        if items:
            bad = [i + 1 for i in items if not 0 <= i < n_items]
            if bad:
                raise ValueError(
                    f"{path.name}: data line {number} has item {bad[0]} outside the "
                    f"alternatives 1..{n_items}"
                )
            if len(set(items)) != len(items):
                dup = next(i + 1 for i in items if items.count(i) > 1)
                raise ValueError(f"{path.name}: data line {number} repeats item {dup}")
            out.extend([list(items) for _ in range(count)])
    if not out:
        raise ValueError(f"{path.name}: the file holds no rankings")
    return RankData(
        lists=out,
        n_items=n_items,
        item_names=[names.get(i, str(i)) for i in range(1, n_items + 1)],
        description=path.name,
    )
