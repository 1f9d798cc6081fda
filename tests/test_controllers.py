"""Workflow controllers and the mechanical audit (SASST Appendix D.7, Table 13).

Expected audit values are derived by hand from the deck's composition: ReAct executes
every call, Plan + verifier (oracle) exactly the valid ones, Confirmation gate exactly the
consent-confirmed ones.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentstudies.agents.controllers import (
    WORKFLOWS,
    ConfirmationGateController,
    PlanVerifierController,
    ProposedCall,
    ReActController,
    extract_mutation,
    make_controller,
    parse_consent,
    parse_verdict,
    serialize_mutation,
)
from agentstudies.envs.tau import get_task
from agentstudies.studies.tau.controller_audit import (
    PAPER_TABLE_13,
    DeckCard,
    audit_deck,
    controller_audit,
    controller_boundary_tests,
    controller_replay,
)

WRITE = ProposedCall("cancel_pending_order", {"order_id": "#W5199551", "reason": "no longer needed"}, True)
READ = ProposedCall("get_order_details", {"order_id": "#W5199551"}, False)


def test_deck_is_balanced_real_and_fixed():
    deck = audit_deck()
    assert len(deck) == 16
    cells = pd.Series([(c.valid, c.consent) for c in deck]).value_counts()
    assert sorted(cells.to_dict().items()) == [
        ((False, "confirmed"), 4), ((False, "declined"), 4), ((True, "confirmed"), 4), ((True, "declined"), 4)
    ]
    for c in deck:
        assert c.call.irreversible
        gold = [a.args() for a in get_task(c.task_id).write_actions if a.name == c.call.name]
        assert (dict(c.call.arguments) in gold) == c.valid
    assert [c.call for c in audit_deck()] == [c.call for c in deck]


def test_audit_equals_the_hand_derivation_and_table_13():
    audit = controller_audit()
    assert list(audit.index) == list(WORKFLOWS)
    # hand derivation on a balanced 4/4/4/4 deck
    expected = {
        "ReAct": (0 / 8, 8 / 8, 8 / 8, 0 / 8),
        "Plan + verifier": (8 / 8, 8 / 8, 4 / 8, 4 / 8),
        "Confirmation gate": (4 / 8, 4 / 8, 8 / 8, 8 / 8),
    }
    cols = ["invalid_block_recall", "valid_approval", "confirmed_executed", "declined_blocked"]
    for w, vals in expected.items():
        assert tuple(audit.loc[w, cols]) == vals
    assert (audit["n_calls"] == 16).all()
    paper = PAPER_TABLE_13.set_index("workflow")[cols]
    pd.testing.assert_frame_equal(audit[cols], paper, check_names=False)


def test_execution_is_observed_in_the_environment():
    rep = controller_replay()
    assert len(rep) == 48
    by = rep.groupby("workflow")
    assert by.get_group("ReAct")["executed"].all()
    pv = by.get_group("Plan + verifier")
    assert (pv["executed"] == pv["valid"]).all()
    gate = by.get_group("Confirmation gate")
    assert (gate["executed"] == (gate["consent"] == "confirmed")).all()
    assert set(gate["outcome"]) == {"confirmed", "declined"} and set(pv["outcome"]) == {"approved", "rejected"}


def test_audit_on_an_unbalanced_deck():
    base = audit_deck()
    # 3 valid-confirmed, 1 valid-declined, 1 invalid-confirmed, 2 invalid-declined
    pick = [c for c in base if c.valid and c.consent == "confirmed"][:3]
    pick += [c for c in base if c.valid and c.consent == "declined"][:1]
    pick += [c for c in base if not c.valid and c.consent == "confirmed"][:1]
    pick += [c for c in base if not c.valid and c.consent == "declined"][:2]
    a = controller_audit(pick)
    # by hand: I = 3 (1 C, 2 D), V = 4 (3 C, 1 D), C = 4, D = 3
    assert tuple(a.loc["ReAct"].iloc[:4]) == (0.0, 1.0, 1.0, 0.0)
    assert tuple(a.loc["Plan + verifier"].iloc[:4]) == (1.0, 1.0, 3 / 4, 2 / 3)
    assert tuple(a.loc["Confirmation gate"].iloc[:4]) == (2 / 3, 3 / 4, 1.0, 1.0)


def test_audit_rejects_decks_missing_a_cell():
    only_valid = [c for c in audit_deck() if c.valid]
    with pytest.raises(ValueError, match="no invalid call"):
        controller_audit(only_valid)
    with pytest.raises(ValueError, match="empty"):
        controller_audit([])
    bad = [DeckCard(c.card, c.task_id, c.call, c.valid, "maybe") for c in audit_deck()]
    with pytest.raises(ValueError, match="consent"):
        controller_audit(bad)


def test_boundary_table_all_pass():
    bt = controller_boundary_tests()
    assert len(bt) >= 10 and bt["passed"].all(), bt[~bt["passed"]]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("APPROVE", "approve"), ("  reject\n", "reject"), ("Approved.", "approve"),
        ('{"verdict": "reject"}', "reject"), ("APPROVE or REJECT", None), ("", None),
        (None, None), (1, None), ("ok", None), ('{"verdict": 1}', None), ("{not json", None),
    ],
)
def test_parse_verdict(raw, expected):
    assert parse_verdict(raw) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [("YES", "confirm"), ("no", "decline"), ("Yes, go ahead", "confirm"), ("yes no", None), ("later", None), (None, None)],
)
def test_parse_consent(raw, expected):
    assert parse_consent(raw) == expected


@pytest.mark.parametrize("raw", ["", "hmm", None, "APPROVE REJECT", 3.5])
def test_malformed_verifier_output_fails_closed(raw):
    d = PlanVerifierController(verifier=lambda p: raw).review(WRITE)
    assert (d.execute, d.outcome, d.malformed) == (False, "rejected", True)


def test_verifier_sees_the_exact_serialized_mutation():
    seen = []
    PlanVerifierController(verifier=lambda p: seen.append(p) or "APPROVE").review(WRITE)
    assert extract_mutation(seen[0]) == {"tool": WRITE.name, "arguments": dict(WRITE.arguments)}
    assert serialize_mutation(WRITE) in seen[0]
    assert json.loads(serialize_mutation(WRITE)) == {"tool": WRITE.name, "arguments": dict(WRITE.arguments)}


def test_empty_arguments_and_repeated_calls():
    empty = ProposedCall("cancel_reservation", {}, True)
    seen = []
    d = ConfirmationGateController(user=lambda p: seen.append(p) or "YES").review(empty)
    assert d.execute and extract_mutation(seen[0])["arguments"] == {}
    gate_calls = []
    gate = ConfirmationGateController(user=lambda p: gate_calls.append(p) or ("YES" if len(gate_calls) == 1 else "NO"))
    assert [gate.review(WRITE).execute for _ in range(2)] == [True, False]  # consent never cached
    pv = PlanVerifierController(verifier=lambda p: "REJECT", max_rejections=3)
    ends = [pv.review(WRITE).end_episode for _ in range(3)]
    assert ends == [False, False, True]
    pv.reset()
    assert not pv.review(WRITE).end_episode


def test_read_calls_are_never_reviewed():
    called = []
    for w in WORKFLOWS:
        c = make_controller(w, verifier=lambda p: called.append(p), user=lambda p: called.append(p))
        assert c.review(READ).execute
    assert called == []
    assert ReActController().review(WRITE).execute


def test_make_controller_errors():
    with pytest.raises(ValueError, match="unknown workflow"):
        make_controller("Reflexion")
    with pytest.raises(ValueError, match="verifier"):
        make_controller("Plan + verifier")
    with pytest.raises(ValueError, match="user"):
        make_controller("Confirmation gate")
    with pytest.raises(ValueError, match="max_rejections"):
        PlanVerifierController(verifier=lambda p: "APPROVE", max_rejections=0)
