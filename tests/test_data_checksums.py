"""Every data file the package reads is checked.

``data/SHA256SUMS`` covers the files without a ``.sha256`` of their own; a changed or
truncated file is refused with a message naming it and the ``git checkout`` that restores it,
and text that is not JSON names the file instead of a bare ``JSONDecodeError``. The digests
here are computed with :mod:`hashlib` on the files themselves, independently of the module.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from agentstudies import _data

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


def _read_files() -> list[Path]:
    """The shipped files the package reads that have no ``.sha256`` beside them."""
    files = [DATA / "alfworld" / "pools.json"]
    files += sorted((DATA / "alfworld" / "checkpoints").glob("*.json"))
    files += sorted((DATA / "alfworld" / "checkpoints").glob("*.csv"))
    files += sorted((DATA / "paper").glob("*.csv"))
    files += sorted((DATA / "classifier_corpus").glob("*.yaml"))
    files += sorted((DATA / "reflexion_humaneval").glob("*.jsonl"))
    files += sorted((DATA / "tau2_leaderboard" / "submissions").glob("*.json"))
    files += [p for p in sorted((DATA / "impossible_lcb_runs").rglob("*"))
              if p.is_file() and p.suffix in (".gz", ".csv", ".json", ".jsonl")]
    return files


def test_every_shipped_data_file_is_covered_by_a_checksum():
    """Each file under data/ (documentation aside) has a digest: its own ``.sha256``, a
    line in ``data/SHA256SUMS``, or a line in its archived run's ``SHA256SUMS``."""
    sums = {ln.split("  ", 1)[1] for ln in (DATA / "SHA256SUMS").read_text().splitlines() if ln.strip()}
    uncovered = []
    for f in sorted(DATA.rglob("*")):
        rel = f.relative_to(DATA).as_posix()
        if not f.is_file() or f.suffix in (".sha256", ".md") or f.name in ("SHA256SUMS", "LICENSE", ".gitattributes"):
            continue
        if rel in sums or f.with_name(f.name + ".sha256").is_file():
            continue
        run_sums = f.parent / "SHA256SUMS"
        if rel.startswith("paper_runs/") and run_sums.is_file() and any(
                ln.split("  ", 1)[-1] == f.name for ln in run_sums.read_text().splitlines()):
            continue
        uncovered.append(rel)
    assert not uncovered, f"data file(s) without a checksum: {uncovered}"


def test_edited_corpus_label_is_refused(fake_data):
    """An edited label in the classifier corpus (same length, other bytes) is refused by name."""
    (fake_data / "classifier_corpus").mkdir()
    src = (DATA / "classifier_corpus" / "heldout.yaml").read_text()
    line = next(ln for ln in (DATA / "SHA256SUMS").read_text().splitlines() if ln.endswith("heldout.yaml"))
    with open(fake_data / "SHA256SUMS", "a") as fh:
        fh.write(line + "\n")
    edited = src.replace("label: ", "label: x", 1)
    assert edited != src
    (fake_data / "classifier_corpus" / "heldout.yaml").write_text(edited)
    with pytest.raises(_data.DataFileError, match="data/classifier_corpus/heldout.yaml does not match its checksum"):
        _data.read_yaml(fake_data / "classifier_corpus" / "heldout.yaml")


def test_invalid_yaml_outside_data_names_the_file(tmp_path):
    bad = tmp_path / "corpus.yaml"
    bad.write_text("items:\n  - name: a\n    label: [unclosed\n")
    with pytest.raises(_data.DataFileError, match=f"data file {bad} is not valid YAML"):
        _data.read_yaml(bad)


def test_every_read_data_file_has_a_checksum_that_matches():
    sums = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    files = _read_files()
    assert len(files) >= 35
    for f in files:
        rel = f.relative_to(DATA).as_posix()
        assert rel in sums, f"data/{rel} has no checksum in data/SHA256SUMS"
        assert hashlib.sha256(f.read_bytes()).hexdigest() == sums[rel], f"data/{rel} differs from its checksum"
    for f in (DATA / "alfworld" / "checkpoints").glob("*.npy"):  # the weights carry their own
        assert f.with_name(f.name + ".sha256").is_file()


@pytest.fixture
def fake_data(tmp_path, monkeypatch) -> Path:
    """A copy of data/alfworld with its manifest lines, as the package's data folder."""
    root = tmp_path / "data"
    shutil.copytree(DATA / "alfworld", root / "alfworld")
    lines = [ln for ln in (DATA / "SHA256SUMS").read_text().splitlines() if ln.split("  ", 1)[1].startswith("alfworld/")]
    (root / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_data, "data_dir", lambda: root)
    return root


def test_truncated_pools_json_names_the_file_and_the_restore(fake_data):
    from agentstudies.envs.alfworld.pools import load_manifest

    path = fake_data / "alfworld" / "pools.json"
    assert load_manifest(path) == json.loads(path.read_text())  # intact: read as before
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(_data.DataFileError) as info:
        load_manifest(path)
    msg = str(info.value)
    assert "data file data/alfworld/pools.json does not match its checksum in data/SHA256SUMS" in msg
    assert "git checkout -- data/alfworld/pools.json" in msg and "rebuild" not in msg
    assert "of its 1,000 bytes" in msg


def test_truncated_checkpoint_meta_names_the_file(fake_data):
    from agentstudies.agents.alfworld import load_weights

    d = fake_data / "alfworld" / "checkpoints"
    (d / "RL.json").write_bytes((d / "RL.json").read_bytes()[:-40])
    with pytest.raises(_data.DataFileError, match=r"data/alfworld/checkpoints/RL.json does not match its checksum.*"
                                                  r"git checkout -- data/alfworld/checkpoints/RL.json"):
        load_weights("RL", d)


def test_invalid_json_outside_data_names_the_file(tmp_path):
    """Not a shipped file (no checksum to compare): the JSON error still names it."""
    from agentstudies.agents.alfworld import load_weights

    d = tmp_path / "ckpt"
    shutil.copytree(DATA / "alfworld" / "checkpoints", d)
    (d / "RL.json").write_text('{"name": "RL", "feature_ver')
    with pytest.raises(_data.DataFileError, match=rf"data file {d / 'RL.json'} is not valid JSON .*truncated"):
        load_weights("RL", d)


def test_changed_weights_say_restore_not_rebuild(fake_data):
    from agentstudies.agents.alfworld import load_weights

    d = fake_data / "alfworld" / "checkpoints"
    raw = bytearray((d / "SFT.npy").read_bytes())
    raw[-1] ^= 1
    (d / "SFT.npy").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"SFT.npy != recorded .* restore it from the repository \(git checkout --"):
        load_weights("SFT", d)


def test_changed_paper_table_is_refused(tmp_path, monkeypatch):
    from agentstudies.studies import _paper

    root = tmp_path / "data"
    (root / "paper").mkdir(parents=True)
    name = "sasst_calibration_table4.csv"
    (root / "paper" / name).write_bytes((DATA / "paper" / name).read_bytes().replace(b"0", b"1", 1))
    digest = hashlib.sha256((DATA / "paper" / name).read_bytes()).hexdigest()
    (root / "SHA256SUMS").write_text(f"{digest}  paper/{name}\n")
    monkeypatch.setattr(_data, "data_dir", lambda: root)
    with pytest.raises(_data.DataFileError, match=f"git checkout -- data/paper/{name}"):
        _paper._read(str(root / "paper" / name), 0.0)


def test_record_updates_the_manifest(fake_data):
    path = fake_data / "alfworld" / "pools.json"
    path.write_text('{"edited": true}\n')
    digest = _data.record(path)
    assert digest == hashlib.sha256(b'{"edited": true}\n').hexdigest()
    assert _data.read_json(path) == {"edited": True}
    assert f"{digest}  alfworld/pools.json" in (fake_data / "SHA256SUMS").read_text()
