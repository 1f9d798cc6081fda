"""agentstudies defers rfc3987_syntax's grammar build without changing answers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = r"""
import json, sys
import agentstudies
import jsonschema
built_at_import = "lark" in sys.modules
v = jsonschema.Draft7Validator({"format": "iri"}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
answers = [v.is_valid(x) for x in ("http://example.org/\u00e4", "ht tp://not an iri", 5)]
print(json.dumps({"built_at_import": built_at_import, "answers": answers, "lark_after": "lark" in sys.modules,
                  "real": getattr(sys.modules["rfc3987_syntax"], "__file__", None)}))
"""


def test_iri_grammar_is_built_only_when_an_iri_is_checked():
    pytest.importorskip("rfc3987_syntax")
    out = json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["built_at_import"] is False          # importing jsonschema no longer builds it
    assert out["answers"] == [True, False, True]    # the real checker's answers (non-strings pass)
    assert out["lark_after"] is True and out["real"]  # the first IRI check loaded the real module


def test_without_agentstudies_first_the_grammar_is_built_as_before():
    pytest.importorskip("rfc3987_syntax")
    probe = "import sys, jsonschema; print('lark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"  # the deferral is agentstudies' doing, not jsonschema's default
