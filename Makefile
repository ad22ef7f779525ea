# Two commands for a newcomer: `make grade` (grade exercises/) and `make test` (this repo's tests).
# Both create .venv and install the pinned environment on first use.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
SUBMISSION ?= exercises
PY := $(VENV)/bin/python

.PHONY: setup setup-dev grade test check lint stubs clean

$(VENV)/.grading: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.grading requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.grading      ## the grading environment
setup-dev: $(VENV)/.dev      ## plus what the repository's own tests need

grade: setup                 ## grade $(SUBMISSION) (default: exercises/), stage by stage
	$(PY) -m autograder grade $(SUBMISSION)

test: setup-dev              ## the repository's own tests
	$(PY) -m pytest

stubs: setup                 ## regenerate exercises/ from lumen/, the single source of every line
	$(PY) -m solutions.release

lint: setup-dev
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) build
