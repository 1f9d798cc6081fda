"""The paper-table convention: ``result.table(n)`` dispatches to
``_table_<n>``, names the paper, and refuses a table it cannot build by listing those it can."""

import pandas as pd
import pytest

from agentstudies.results import PaperTables


class _Demo(PaperTables):
    PAPER = "handoff"

    def _table_2(self):
        return pd.DataFrame({"cell": ["a"], "paper": [1.0], "this run": [2.0]})

    def _table_10(self):
        return pd.DataFrame({"cell": ["b"]})

    def _table_router(self, *, level=0.95):
        return pd.DataFrame({"level": [level]})


def test_dispatch_and_attrs():
    t = _Demo().table(2)
    assert list(t.columns) == ["cell", "paper", "this run"]
    assert t.attrs == {"paper": "handoff", "table": "2"}
    assert _Demo().table("router", level=0.9)["level"].iloc[0] == 0.9


def test_listing_is_numeric_then_named():
    assert _Demo.paper_tables() == ("2", "10", "router")


def test_unknown_table_names_what_exists():
    with pytest.raises(KeyError, match=r"handoff.*'2', '10', 'router'.*7"):
        _Demo().table(7)
