# Two commands for a newcomer: `make grade` (grade exercises/) and `make test` (this repo's tests).
# Both create .venv and install the pinned environment on first use.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
SUBMISSION ?= exercises
PY := $(VENV)/bin/python

.PHONY: setup setup-dev sandbox grade grade-cuda test check lint stubs mutation benchmark clean \
	benchmark-batch gradescope handout

$(VENV)/.grading: requirements.txt
	@$(MAKE) --no-print-directory sandbox
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.grading requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

sandbox:                     ## bubblewrap for learner code, where we may install it (else: warned)
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1)); } || \
	  echo "note: bubblewrap (bwrap) is not installed; grading falls back to a plain process"

setup: $(VENV)/.grading      ## the grading environment
setup-dev: $(VENV)/.dev      ## plus what the repository's own tests need

grade: setup                 ## grade $(SUBMISSION) (default: exercises/), stage by stage
	$(PY) -m autograder grade $(SUBMISSION)

grade-cuda: setup           ## the same on CPU and CUDA (a GPU runner; e.g. make grade-cuda TORCH=torch==2.13.0)
	$(PY) -m autograder grade $(SUBMISSION) --device cuda

test: setup-dev              ## the repository's own tests
	$(PY) -m pytest

stubs: setup                 ## regenerate exercises/ from lumen/, the single source of every line
	$(PY) -m solutions.release

mutation: setup-dev          ## mutate lumen's solution lines; every mutant must lose points
	$(PY) -m tools.mutation

benchmark: setup-dev         ## speed targets, as ratios measured side by side
	$(PY) benchmarks/grade_speed.py

benchmark-batch: setup-dev   ## a class of 100 in one batch vs. one cold grade each (target 0.25)
	$(PY) benchmarks/batch_speed.py

gradescope: setup            ## build/autograder.zip: upload it to Gradescope as the autograder
	$(PY) -m autograder.gradescope --out build/autograder.zip --torch "$(TORCH)"

handout: setup               ## build/handout.zip: what learners receive (exercises/, README)
	$(PY) -m solutions.handout --out build/handout.zip

lint: setup-dev
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) build
