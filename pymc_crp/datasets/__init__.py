"""Small data sets shipped with the package, and a reader for PrefLib rank data.

* :func:`load_witness_lists` — 15 witness lists of bishops in the royal charters of 1135
  (Nicholls et al., 2025), ranked lists over subsets of 16 items.
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

__all__ = ["RankData", "load_galaxies", "load_witness_lists", "read_preflib"]


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
    lines = path.read_text().splitlines()
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
