"""The one result convention shared by every method package.

Every result object a method returns (SASST, handoff, recovery, the diagnostics, and any
future one) subclasses :class:`Result` and so offers the same surface, in the spirit of
statsmodels / econml result objects:

``summary()``
    human-readable text (also shown by ``_repr_html_`` in a notebook and by ``str``);
``to_frame()``
    **always** the long tidy table: one row per estimand x stratum, with the stratum
    columns first and then :data:`TIDY_COLUMNS` (``estimand, estimate, se, ci_low,
    ci_high, bound, side, level, n``; NaN / ``""`` where a field is not defined);
``get(estimand, **keys)``
    the one tidy row for an estimand in a stratum (``KeyError`` naming what exists);
``params``
    the method's parameters (a dict; ``level``, ``n_draws``, ``seed`` are the names
    used package-wide for confidence level, resampling draws and the root seed);
``provenance``
    a :class:`ResultProvenance` (package version, SHA-256 of the inputs, seed).

Paper-shaped layouts follow one convention (:class:`PaperTables`): a result that regenerates
a paper's tables says which paper (``PAPER``) and answers ``result.table(6)`` with the
paper's Table 6 as a tidy frame (``paper`` and ``this run`` columns where the paper has
values); ``result.paper_tables()`` lists the numbers it can build.

A subclass implements :meth:`Result._tidy` (and may override :meth:`Result.summary`)::

    @dataclass(frozen=True)
    class MyResult(Result):
        rows: pd.DataFrame
        params: dict = field(default_factory=dict)
        provenance: ResultProvenance = field(default_factory=ResultProvenance)
        def _tidy(self) -> pd.DataFrame:
            return self.rows

Hashing of inputs (:func:`hash_object`) lives here so that method packages record
provenance without importing the book layer.
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies import __version__

__all__ = [
    "PaperTables",
    "Result",
    "ResultProvenance",
    "TIDY_COLUMNS",
    "SIDES",
    "hash_object",
    "make_provenance",
    "tidy_rows",
]

#: Columns every ``to_frame()`` ends with, in this order (stratum columns come first).
TIDY_COLUMNS: tuple[str, ...] = (
    "estimand", "estimate", "se", "ci_low", "ci_high", "bound", "side", "level", "n",
)

#: Allowed values of ``side``: ``"two-sided"`` for an interval, ``"lower"`` / ``"upper"``
#: for a one-sided bound, ``""`` for a point value with no uncertainty statement.
SIDES: tuple[str, ...] = ("two-sided", "lower", "upper", "")


def hash_object(obj: Any) -> str:
    """SHA-256 of a file path, bytes, str, DataFrame/Series, ndarray or JSON-able object.

    DataFrames are hashed on their values, index and column names (row order matters),
    so the same table always gives the same digest.

    Raises
    ------
    FileNotFoundError
        If ``obj`` is a :class:`pathlib.Path` that does not exist.
    TypeError
        If the object cannot be hashed deterministically.
    """
    h = hashlib.sha256()
    if isinstance(obj, Path):
        if not obj.is_file():
            raise FileNotFoundError(f"cannot hash input file {obj}: it does not exist")
        with obj.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    elif isinstance(obj, bytes):
        h.update(obj)
    elif isinstance(obj, str):
        h.update(obj.encode())
    elif isinstance(obj, (pd.DataFrame, pd.Series)):
        h.update(pd.util.hash_pandas_object(obj, index=True).values.tobytes())
        cols = list(obj.columns) if isinstance(obj, pd.DataFrame) else [obj.name]
        h.update(json.dumps([str(c) for c in cols]).encode())
    elif isinstance(obj, np.ndarray):
        h.update(str(obj.dtype).encode())
        h.update(str(obj.shape).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    else:
        try:
            h.update(json.dumps(obj, sort_keys=True, default=str).encode())
        except TypeError as exc:  # pragma: no cover - defensive
            raise TypeError(f"cannot hash object of type {type(obj).__name__}") from exc
    return h.hexdigest()


@dataclass(frozen=True)
class ResultProvenance:
    """Where a result came from: package version, SHA-256 of each input, root seed.

    No timestamps: two runs on the same inputs and seed give equal provenance.
    """

    version: str = __version__
    inputs: Mapping[str, str] = field(default_factory=dict)
    seed: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``{"version", "inputs", "seed"}``)."""
        return {"version": self.version, "inputs": dict(self.inputs), "seed": self.seed}


def make_provenance(seed: Any = None, **inputs: Any) -> ResultProvenance:
    """A :class:`ResultProvenance` hashing each keyword input with :func:`hash_object`.

    ``make_provenance(seed=0, episodes=df, features=X)`` records ``{"episodes": sha256,
    "features": sha256}``. ``None`` inputs are skipped.
    """
    if isinstance(seed, np.random.SeedSequence):
        seed = {"entropy": int(seed.entropy) if isinstance(seed.entropy, int) else str(seed.entropy),
                "spawn_key": list(seed.spawn_key)}
    elif isinstance(seed, np.integer):
        seed = int(seed)
    return ResultProvenance(
        inputs={k: hash_object(v) for k, v in inputs.items() if v is not None}, seed=seed
    )


def tidy_rows(rows: list[Mapping[str, Any]] | pd.DataFrame, *, strata: tuple[str, ...] = ()) -> pd.DataFrame:
    """Build a tidy frame: stratum columns, then :data:`TIDY_COLUMNS` (missing ones filled).

    Parameters
    ----------
    rows : list of mappings or DataFrame
        Each row holds at least ``estimand`` and ``estimate``; absent tidy fields become
        NaN (numbers) or ``""`` (``side``).
    strata : names of the stratum columns, placed first in this order (recorded in
        ``attrs["strata"]``); other columns follow them, then :data:`TIDY_COLUMNS`.

    Raises
    ------
    KeyError
        If a row lacks ``estimand`` or ``estimate``, or a named stratum column is absent.
    ValueError
        If ``side`` holds a value outside :data:`SIDES`.
    """
    df = pd.DataFrame(rows).copy() if not isinstance(rows, pd.DataFrame) else rows.copy()
    for col in ("estimand", "estimate"):
        if col not in df.columns:
            raise KeyError(f"tidy result rows need a {col!r} column; got {list(df.columns)}")
    missing = [s for s in strata if s not in df.columns]
    if missing:
        raise KeyError(f"stratum column(s) {missing} not in result rows {list(df.columns)}")
    for col in TIDY_COLUMNS:
        if col not in df.columns:
            df[col] = "" if col == "side" else np.nan
    df["side"] = df["side"].fillna("").astype(str)
    bad = sorted(set(df["side"]) - set(SIDES))
    if bad:
        raise ValueError(f"side must be one of {SIDES}; got {bad}")
    extra = [c for c in df.columns if c not in TIDY_COLUMNS and c not in strata]
    out = df[list(strata) + extra + list(TIDY_COLUMNS)].reset_index(drop=True)
    out.attrs["strata"] = tuple(strata)
    return out


class Result:
    """Base class of every result object (see the module docstring for the contract).

    Subclasses are frozen dataclasses that define ``params`` (dict) and ``provenance``
    (:class:`ResultProvenance`) fields and implement :meth:`_tidy`.
    """

    #: Title used by :meth:`summary` and ``_repr_html_``.
    title: str = "result"

    params: Mapping[str, Any]
    provenance: ResultProvenance

    # --------------------------------------------------------------- contract
    def _tidy(self) -> pd.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_frame(self) -> pd.DataFrame:
        """The long tidy table: stratum columns, then :data:`TIDY_COLUMNS`."""
        df = self._tidy()
        missing = [c for c in TIDY_COLUMNS if c not in df.columns]
        if missing:
            raise TypeError(f"{type(self).__name__}._tidy() lacks tidy column(s) {missing}")
        strata = df.attrs.get("strata")
        df = df.reset_index(drop=True)
        if strata is not None:
            df.attrs["strata"] = strata
        return df

    @property
    def strata(self) -> tuple[str, ...]:
        """The stratum columns of :meth:`to_frame` (as given to :func:`tidy_rows`; else
        every column before ``estimand``)."""
        df = self.to_frame()
        if "strata" in df.attrs:
            return tuple(df.attrs["strata"])
        cols = list(df.columns)
        return tuple(c for c in cols[: cols.index("estimand")])

    def get(self, estimand: str, **keys: Any) -> pd.Series:
        """The tidy row of ``estimand`` in the stratum given by ``keys``.

        Raises
        ------
        KeyError
            Naming the available estimands (or stratum values) when none or several rows
            match; give more keys to pick one.
        """
        df = self.to_frame()
        if estimand not in set(df["estimand"]):
            raise KeyError(f"no estimand {estimand!r}; available: {sorted(set(df['estimand']))}")
        sel = df[df["estimand"] == estimand]
        for key, value in keys.items():
            if key not in df.columns:
                raise KeyError(f"{key!r} is not a stratum of this result; strata: {list(self.strata)}")
            sel = sel[sel[key].astype(str) == str(value)]
        if len(sel) == 0:
            raise KeyError(f"estimand {estimand!r} has no row for {keys}; "
                           f"strata: {df[df['estimand'] == estimand][list(self.strata)].drop_duplicates().to_dict('records')}")
        if len(sel) > 1:
            free = [s for s in self.strata if s not in keys and sel[s].nunique() > 1]
            raise KeyError(f"estimand {estimand!r} has {len(sel)} rows for {keys}; "
                           f"also give {free}")
        return sel.iloc[0]

    def summary(self) -> str:
        """Text summary: the title, the parameters, and the tidy table."""
        df = self.to_frame()
        lines = [f"{self.title}"]
        if self.params:
            lines.append("parameters: " + ", ".join(f"{k}={v!r}" for k, v in self.params.items()))
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 200):
            lines.append(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.summary())}</pre>"

    def __str__(self) -> str:
        return self.summary()


class PaperTables:
    """Mixin: the one paper-table convention.

    A result that regenerates tables of a paper sets the class attribute ``PAPER`` (the
    paper's key in :mod:`agentstudies.book.paper.map`: ``"sasst"``, ``"handoff"``, ``"cir"``,
    ``"impossiblebench"``, ``"tau"``) and implements one private method per table,
    ``_table_<n>(self) -> pandas.DataFrame`` (``n`` the paper's table number, or a name
    such as ``"router"`` for a layout the paper prints without a number). Callers use
    :meth:`table` only, so ``handoff_result.table(6)`` and ``sasst_result.table(6)`` can
    never be confused: each result belongs to one paper.

    The frame returned is tidy (one row per cell group of the paper's table) and carries a
    ``paper`` and a ``this run`` column where the paper prints values (``NaN`` where it
    does not); ``frame.attrs["paper"]`` and ``frame.attrs["table"]`` name its source.
    """

    PAPER: str = ""

    @classmethod
    def paper_tables(cls) -> tuple[str, ...]:
        """The table numbers (as text, numbers first in numeric order) this result builds."""
        names = [n[len("_table_"):] for n in dir(cls) if n.startswith("_table_") and callable(getattr(cls, n))]
        return tuple(sorted(names, key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n)))

    def table(self, number: int | str, **kwargs: Any) -> pd.DataFrame:
        """The paper's Table ``number`` regenerated from this result.

        Raises
        ------
        KeyError
            Naming the paper and the tables this result can build, when ``number`` is not
            one of them.
        """
        key = str(number).strip()
        fn = getattr(self, f"_table_{key}", None)
        if fn is None or not callable(fn):
            raise KeyError(f"{type(self).__name__} regenerates {self.PAPER or 'no paper'}'s tables "
                           f"{list(self.paper_tables())}, not {number!r}")
        out = fn(**kwargs)
        if isinstance(out, pd.DataFrame):
            out.attrs.setdefault("paper", self.PAPER)
            out.attrs.setdefault("table", key)
        return out


def _id_text(value: object) -> str:
    """One text form per id: ``5``, ``5.0``, ``np.int64(5)`` and ``"5"`` are all ``"5"``."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)
