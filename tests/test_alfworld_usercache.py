"""The cross-build user cache of ALFWorld translations and checked games.

A cached and an uncached run must give byte-identical outputs, and an entry altered on
disk must be detected by its checksum, reported and recomputed -- never trusted.
"""

from __future__ import annotations

import json
import pickle
import warnings
import zlib
from pathlib import Path

import pytest

from agentstudies.envs.alfworld import engine, usercache
from agentstudies.envs.alfworld._testing import SMALL_LAYOUTS, small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.generate import generate_game


@pytest.fixture
def counted_translator(monkeypatch):
    import fast_downward

    calls = []
    real = fast_downward.pddl2sas
    monkeypatch.setattr(fast_downward, "pddl2sas", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.delenv(engine.SCRATCH_ENV, raising=False)
    return calls


def _play(game) -> bytes:
    """Observations, admissible commands and the translations of a short scripted play, pickled."""
    engine._SAS.clear()
    e = AlfworldEnv(budget=6)
    e.load_game(game)
    e.reset(3, 6)
    seen = [(e.observation, tuple(e.admissible))]
    for _ in range(4):
        e.step(sorted(e.admissible)[0])
        seen.append((e.observation, tuple(e.admissible)))
    e.close()
    sas = sorted(v[1] for v in engine._SAS.values())
    return pickle.dumps((seen, sas))


def _entries(folder: Path, kind: str) -> list[Path]:
    return sorted((folder / kind).glob("*/*.bin"))


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(usercache.CACHE_ENV, str(tmp_path / "c"))
    assert usercache.cache_folder() == tmp_path / "c"
    for off in ("off", "0", "", "none"):
        monkeypatch.setenv(usercache.CACHE_ENV, off)
        assert usercache.cache_folder() is None
    monkeypatch.delenv(usercache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert usercache.cache_folder() == tmp_path / "xdg" / "agentstudies"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert usercache.cache_folder() == tmp_path / "home" / ".cache" / "agentstudies"


def test_keys_depend_on_versions_and_every_input(monkeypatch):
    k = usercache.entry_key("alfworld-sas", "dom", "prob", "")
    assert k != usercache.entry_key("alfworld-sas", "dom", "prob", "opt")
    assert k != usercache.entry_key("alfworld-sas", "domp", "rob", "")  # parts are length-framed
    assert k != usercache.entry_key("alfworld-game", "dom", "prob", "")
    monkeypatch.setattr(usercache, "_VERSIONS", "agentstudies=9;fast_downward_textworld=9;alfworld=9;textworld=9")
    assert k != usercache.entry_key("alfworld-sas", "dom", "prob", "")
    assert "fast_downward_textworld=" in usercache.engine_versions()


def test_cached_and_uncached_plays_are_byte_identical(monkeypatch, tmp_path, counted_translator):
    game = small_game("look_at_obj_in_light")
    monkeypatch.setenv(usercache.CACHE_ENV, "off")
    uncached = _play(game)
    n = len(counted_translator)
    assert n >= 1 and not (tmp_path / "alfworld-sas").exists()

    monkeypatch.setenv(usercache.CACHE_ENV, str(tmp_path))
    cold = _play(game)                              # translates and writes the entries
    assert len(counted_translator) == 2 * n and len(_entries(tmp_path, "alfworld-sas")) == n
    warm = _play(game)                              # a later build: read back, nothing translated
    assert len(counted_translator) == 2 * n
    assert uncached == cold == warm


def test_a_corrupted_entry_is_detected_reported_and_recomputed(monkeypatch, tmp_path, counted_translator):
    game = small_game("look_at_obj_in_light")
    monkeypatch.setenv(usercache.CACHE_ENV, str(tmp_path))
    first = _play(game)
    n = len(counted_translator)
    files = _entries(tmp_path, "alfworld-sas")
    assert len(files) == n >= 1
    raw = bytearray(files[0].read_bytes())
    raw[-5] ^= 0x01                                 # one bit flipped in the payload
    files[0].write_bytes(bytes(raw))
    before = usercache.STATS["corrupt"]
    with pytest.warns(usercache.CacheCorruptionWarning, match=files[0].name):
        again = _play(game)
    assert usercache.STATS["corrupt"] == before + 1
    assert len(counted_translator) == n + 1         # only the bad entry was translated again
    assert again == first
    assert usercache.get("alfworld-sas", files[0].stem) is not None  # rewritten, valid
    # a well-formed payload that is not the one the checksum was taken of (swapped
    # content, which zlib and pickle alone would accept) is caught by the checksum
    good = files[0].read_bytes()
    n_head = len(usercache.MAGIC) + 32
    files[0].write_bytes(good[:n_head] + zlib.compress(pickle.dumps(("not", "the translation")), 1))
    with pytest.warns(usercache.CacheCorruptionWarning):
        assert usercache.get("alfworld-sas", files[0].stem) is None
    files[0].write_bytes(b"torn")                   # a truncated entry: the same
    with pytest.warns(usercache.CacheCorruptionWarning):
        assert usercache.get("alfworld-sas", files[0].stem) is None
    assert not files[0].exists()


def test_a_checked_game_is_cached_across_builds(monkeypatch, tmp_path):
    split, layout = SMALL_LAYOUTS["pick_and_place_simple"]
    args = (split, "pick_and_place_simple", 0, 11)
    monkeypatch.setenv(usercache.CACHE_ENV, "off")
    fresh = generate_game(*args, layouts=[layout])
    monkeypatch.setenv(usercache.CACHE_ENV, str(tmp_path))
    cold = generate_game(*args, layouts=[layout])
    assert len(_entries(tmp_path, "alfworld-game")) == 1
    import agentstudies.envs.alfworld.generate as gen

    monkeypatch.setattr(gen, "_generate_game", lambda *a, **k: pytest.fail("regenerated despite the cache"))
    warm = generate_game(*args, layouts=[layout])
    assert json.dumps(fresh, sort_keys=True) == json.dumps(cold, sort_keys=True) == json.dumps(warm, sort_keys=True)
    # another budget is another key
    with pytest.raises(pytest.fail.Exception):
        generate_game(*args, layouts=[layout], budget=47)
    entry = _entries(tmp_path, "alfworld-game")[0]
    entry.write_bytes(entry.read_bytes()[:-1])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert usercache.get("alfworld-game", entry.stem) is None
    assert any(issubclass(x.category, usercache.CacheCorruptionWarning) for x in w)
