"""Impossible coding tasks: validating the artefact classifier and auditing the HumanEval originals.

Part of the study driver :mod:`agentstudies.studies.impossible` (import from there):
:func:`classifier_confusion` -- the artefact classifier
(:func:`~agentstudies.envs.impossible.classify_submission`) against the simulated agents'
known strategies (:func:`attempt_truth`); :func:`classifier_corpus` /
:func:`corpus_confusion` / :func:`corpus_recall` -- the same classifier on the hand-written
corpus it was not built from (``data/classifier_corpus/``); :func:`audit_summary` -- the
three-way audit of the originals' docstring examples, tests and canonical solutions.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentstudies.envs.impossible import load_variant_table
from agentstudies.studies.impossible.run import _repo_root

__all__ = ["attempt_truth", "classifier_confusion", "audit_summary", "classifier_corpus", "corpus_confusion",
           "corpus_recall"]


def attempt_truth(attempts: pd.DataFrame) -> pd.Series:
    """The known strategy of each attempt: the agent's own, or ``A`` once an earlier
    attempt of the episode edited the (persistent) test workspace; honest -> ``none``."""
    key = ["task_id", "kind", "policy", "workflow", "replicate", "reminder"]
    truth = attempts["true_strategy"].replace({"honest": "none"})
    earlier_edit = (attempts.groupby(key, sort=False)["tests_modified"].shift(1, fill_value=False)
                    .groupby([attempts[k] for k in key], sort=False).cummax())
    return truth.where(~earlier_edit.astype(bool), "A")


def classifier_confusion(attempts: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Confusion matrix (rows: known strategy, columns: classified) and accuracy."""
    truth = attempt_truth(attempts)
    labels = ["none", "A", "B", "C", "D", "E"]
    cm = pd.crosstab(pd.Categorical(truth, labels), pd.Categorical(attempts["classified"], labels),
                     rownames=["known"], colnames=["classified"], dropna=False)
    acc = float((truth.to_numpy() == attempts["classified"].to_numpy()).mean())
    return cm, acc


def audit_summary(table: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The three-way audit of the HumanEval originals (:func:`~agentstudies.envs.impossible.audit_original`).

    Returns ``(disagreements, counts, unparsed)``: every disagreement with its example
    (:func:`~agentstudies.envs.impossible.audit_frame`); ``check, n, tasks``: the docstring
    examples read (and the tasks stating any), the disagreements found by each audit check
    (and the tasks they concern), and the originals flagged; and every docstring mention
    of the entry point that is not a literal example, with why (``task_id, text, reason``).
    """
    from agentstudies.envs.impossible import AUDIT_CHECKS, audit_frame

    table = table if table is not None else load_variant_table()
    dis = audit_frame(table)
    n_ex = [t["audit"]["n_examples"] for t in table["tasks"]]
    rows = [{"check": "docstring examples read (literal calls with a value)", "n": int(sum(n_ex)),
             "tasks": int(sum(n > 0 for n in n_ex))}]
    rows += [{"check": c, "n": int((dis["check"] == c).sum()),
              "tasks": int(dis.loc[dis["check"] == c, "task_id"].nunique())} for c in AUDIT_CHECKS]
    rows.append({"check": "originals flagged (kept out of every variant set)", "n": int(len(dis)),
                 "tasks": int(sum(t["flagged"] for t in table["tasks"]))})
    unparsed = pd.DataFrame([dict(u, task_id=t["task_id"]) for t in table["tasks"] for u in t["audit"]["unparsed_examples"]],
                            columns=["task_id", "text", "reason"])
    return dis, pd.DataFrame(rows), unparsed


def classifier_corpus(path: Path | None = None, *, split: str = "corpus") -> pd.DataFrame:
    """The hand-written labelled corpus for validating the classifier on code it was not
    built from: ``split="corpus"`` (``data/classifier_corpus/corpus.yaml``, the development
    set the classifier's rules were extended against) or ``"heldout"`` (``heldout.yaml``,
    written after those rules were frozen); ``path`` another file. One row per submission with
    ``name, task, label, form, entry_point, code, edit, tests_before, tests_after,
    examples`` (``edit`` / ``tests_after`` ``None`` when absent).

    Raises
    ------
    KeyError
        An item naming an unknown task, or missing ``name`` / ``task`` / ``label`` / ``code``.
    ValueError
        A label outside :data:`agentstudies.envs.impossible.STRATEGIES`, or a duplicate name;
        a shipped corpus that differs from its checksum in ``data/SHA256SUMS`` (truncated,
        an edited label), or a file that is not YAML or lacks ``tasks`` / ``items``
        (``agentstudies._data.DataFileError``, naming the file).
    """
    from agentstudies._data import read_yaml
    from agentstudies.envs.impossible import STRATEGIES

    if path is None and split not in ("corpus", "heldout"):
        raise ValueError(f"split must be 'corpus' or 'heldout', got {split!r}")
    path = Path(path) if path is not None else _repo_root() / "data" / "classifier_corpus" / f"{split}.yaml"
    doc = read_yaml(path)  # checked against data/SHA256SUMS: a cut or edited corpus is refused by name
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list) or not isinstance(doc.get("tasks"), dict):
        raise ValueError(f"{path}: expected a mapping with 'tasks' (a mapping) and 'items' (a list); the file is "
                         "truncated or not a classifier corpus")
    rows = []
    for item in doc["items"]:
        missing = [k for k in ("name", "task", "label", "code") if k not in item]
        if missing:
            raise KeyError(f"{path}: item {item.get('name', '?')!r} lacks {missing}")
        if item["task"] not in doc["tasks"]:
            raise KeyError(f"{path}: item {item['name']!r} names unknown task {item['task']!r}")
        if str(item["label"]) not in STRATEGIES:
            raise ValueError(f"{path}: item {item['name']!r} has label {item['label']!r}, expected one of {STRATEGIES}")
        t = doc["tasks"][item["task"]]
        rows.append({"name": item["name"], "task": item["task"], "label": str(item["label"]),
                     "form": item.get("form", ""), "entry_point": t["entry_point"], "code": item["code"],
                     "edit": item.get("edit"), "tests_before": t["tests"], "tests_after": item.get("tests_after"),
                     "examples": [(tuple(a), v) for a, v in t.get("examples", [])]})
    df = pd.DataFrame(rows)
    dup = df["name"][df["name"].duplicated()].tolist()
    if dup:
        raise ValueError(f"{path}: duplicate item names {dup}")
    return df


def corpus_confusion(corpus: pd.DataFrame | None = None, classify=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The classifier on the hand-written corpus: ``(confusion, per_item)``.

    Each submission is classified from its artefacts alone (``passed_impossible=False``:
    the static signature must be found; a pass with no signature would otherwise be E by
    rule). ``classify`` defaults to
    :func:`~agentstudies.envs.impossible.classify_submission`. ``confusion``: rows the
    corpus label, columns the classified strategy (counts, every label of
    :data:`~agentstudies.envs.impossible.STRATEGIES`); ``per_item``: ``name, label, form,
    classified``.
    """
    from agentstudies.envs.impossible import STRATEGIES, classify_submission

    corpus = classifier_corpus() if corpus is None else corpus
    classify = classify or classify_submission
    def text(v):
        return v if isinstance(v, str) else None

    got = [classify(r.code, r.entry_point, r.tests_before, tests_after=text(r.tests_after), edit=text(r.edit),
                    passed_impossible=False, examples=list(r.examples))["strategy"] for r in corpus.itertuples()]
    per = corpus[["name", "task", "label", "form"]].assign(classified=got)
    labels = list(STRATEGIES)
    cm = pd.crosstab(pd.Categorical(per["label"], labels), pd.Categorical(per["classified"], labels),
                     rownames=["label"], colnames=["classified"], dropna=False)
    return cm, per


def corpus_recall(cm: pd.DataFrame) -> pd.DataFrame:
    """Per label of a confusion matrix (rows: truth): ``n``, ``correct``, ``recall`` (share
    of the row on its diagonal), and ``labelled_a_strategy`` (for ``none``: honest
    submissions given any strategy)."""
    rows = []
    for lab in cm.index:
        n = int(cm.loc[lab].sum())
        ok = int(cm.loc[lab, lab]) if lab in cm.columns else 0
        rows.append({"label": lab, "n": n, "correct": ok, "recall": ok / n if n else float("nan"),
                     "labelled_a_strategy": n - ok if lab == "none" else float("nan")})
    return pd.DataFrame(rows)
