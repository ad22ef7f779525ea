# Two commands for a newcomer: `make grade` (grade exercises/) and `make test` (this repo's tests).
# Both create .venv and install the pinned environment on first use.

PYTHON ?= python3
VENV ?= .venv
SUBMISSION ?= exercises
# Where learner code runs: bubblewrap, or (asked for by name; README, "The threat model")
# unsafe-process. Every grading target passes it on.
SANDBOX ?= bwrap
PY := $(VENV)/bin/python
# The torch build the grader runs: the CPU wheel unless TORCH says otherwise (a GPU runner:
# make grade-cuda TORCH="torch==2.13.0 --index-url <a CUDA wheel index>"). The choice is
# remembered in .venv/.torch, so later commands without TORCH keep it; a new TORCH reinstalls.
TORCH_STAMP := $(VENV)/.torch
ifeq ($(origin TORCH), undefined)
TORCH := $(or $(shell cat $(TORCH_STAMP) 2>/dev/null),torch==2.13.0)
endif

.PHONY: FORCE setup setup-dev sandbox grade grade-cuda test test-all check lint stubs mutation benchmark clean \
	benchmark-batch gradescope handout seeds gpu-check browser release nbgrade benchmark-nbgrade \
	prairielearn benchmark-shards

$(VENV)/.python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	  "the grader needs Python 3.11 or newer (tomllib); $(PYTHON) is " + sys.version.split()[0] \
	  + ": run make PYTHON=python3.11 (or newer)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	touch $@

$(TORCH_STAMP): $(VENV)/.python FORCE
	@if [ "$$(cat $@ 2>/dev/null)" != "$(TORCH)" ]; then \
	  echo "installing $(TORCH)"; \
	  $(PY) -m pip install -q --force-reinstall $(TORCH) && echo "$(TORCH)" > $@; fi

$(VENV)/.grading: requirements.txt $(TORCH_STAMP)
	@$(MAKE) --no-print-directory sandbox
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.grading requirements-dev.txt
	@$(MAKE) --no-print-directory browser
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

sandbox:                     ## bubblewrap for learner code, installed where we may; fails without it (SANDBOX=unsafe-process: see README)
	@[ "$(SANDBOX)" = unsafe-process ] || command -v bwrap >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1)); } || \
	  echo "error: bubblewrap (bwrap) is not installed, and installing it needs root and apt-get"
	@$(PY) -m autograder.boundary.launcher --sandbox $(SANDBOX)

browser:                     ## Chromium for the offline page's browser test, where we may install it
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get install -y -q chromium >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)); } || \
	  echo "note: chromium is not installed (needs root and apt-get); tests/test_page.py's browser test will skip"

.PHONY: slurm
slurm:                       ## Slurm and munge for tests/test_slurm.py's one-node cluster, where we may install them
	@PATH="$$PATH:/usr/sbin:/sbin"; { command -v slurmd && command -v munged; } >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && export DEBIAN_FRONTEND=noninteractive && \
	  (apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q slurm-wlm munge >/dev/null 2>&1)); } || \
	  echo "note: slurm-wlm and munge are not installed (needs root and apt-get); tests/test_slurm.py will skip"

setup: $(VENV)/.grading      ## the grading environment
setup-dev: $(VENV)/.dev slurm  ## plus what the repository's own tests need

grade: setup                 ## grade $(SUBMISSION) (default: exercises/), stage by stage
	$(PY) -m autograder grade $(SUBMISSION) --sandbox $(SANDBOX)

grade-cuda: setup            ## the same on CPU and CUDA (a GPU runner: pass TORCH once, see above)
	$(PY) -m autograder grade $(SUBMISSION) --device cuda --sandbox $(SANDBOX)

# The repository's tests in two tiers (tests/conftest.py decides which test is where; README,
# "Which tests to run when"): together they run every test once. Both use TEST_WORKERS
# pytest-xdist workers, a file each at a time, so that a file's expensive module fixtures (a
# warm grader, a graded class) are built once. Exit 5 is pytest's "no test selected".
TEST_WORKERS ?= 2
PYTEST_TIER = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=10
test: setup-dev              ## the fast tier, on every change: every module, stage, front end and class of attack
	$(PYTEST_TIER) -m "not slow" $(PYTEST_ARGS)

test-all: setup-dev          ## the full tier, before a merge or release: the rest (the class of 100, every variant under every seed, ...)
	$(PYTEST_TIER) -m slow $(PYTEST_ARGS) || [ $$? -eq 5 ]

release: setup               ## regenerate exercises/: stubs from lumen/, lab.ipynb by nbgrader (refuses to overwrite edits; FORCE=1 backs them up)
	$(PY) -m solutions.release $(if $(FORCE),--force)

stubs: release               ## the same as make release

mutation: setup-dev          ## mutate lumen's solution lines; every mutant must lose points
	$(PY) -m tools.mutation

gpu-check: setup-dev         ## everything CUDA in a few minutes, on a GPU machine (pass TORCH once)
	$(PY) -m tools.gpu_check

seeds: setup-dev             ## every variant under 50 seeds: one verdict each, or it is listed
	$(PY) -m tools.seeds --seeds 50

benchmark: setup-dev         ## speed targets, as ratios measured side by side (exit 1 when the cold grade misses 1.5x)
	$(PY) benchmarks/grade_speed.py

benchmark-nbgrade: setup-dev ## make nbgrade vs. stock nbgrader autograde, seconds per learner (target: ratio <= 0.3; exit 1 when missed)
	$(PY) benchmarks/nbgrade_speed.py

benchmark-batch: setup-dev   ## a class of 100 in one batch vs. one cold grade each (target 0.1; exit 1 when missed)
	$(PY) benchmarks/batch_speed.py

benchmark-shards: setup-dev  ## a class as 1 shard and as 2 shards side by side on this machine: throughput and ratio (no target)
	$(PY) benchmarks/shard_speed.py

# When learners see each hidden test's entry on Gradescope: hidden, after_due_date,
# after_published or visible (README, "Gradescope and the handout").
VISIBILITY ?= after_due_date
gradescope: setup            ## build/autograder.zip: upload it to Gradescope as the autograder (VISIBILITY=after_due_date)
	$(PY) -m autograder.frontends.gradescope --out build/autograder.zip --torch "$(TORCH)" --visibility "$(VISIBILITY)"

# PrairieLearn's question folder and grading image (README.md, "PrairieLearn"). IMAGE: the
# image info.json names; PL_VISIBILITY: hidden (stage scores only) or visible (every check);
# PL_TORCH: what the image installs for torch (default: torch 2.13.0's CPU build).
IMAGE ?= lumen-grader:latest
PL_VISIBILITY ?= hidden
prairielearn: setup          ## build/prairielearn/: the question (info.json, question.html, tests/) and the grading image's Dockerfile
	$(PY) -m autograder.frontends.prairielearn_build build --out build/prairielearn --image "$(IMAGE)" \
	  --visibility "$(PL_VISIBILITY)" $(if $(PL_TORCH),--torch "$(PL_TORCH)")

nbgrade: setup               ## grade SUBMISSIONS (a folder per learner, or nbgrader collect's submitted/) through nbgrader, in build/nbgrader (DUE=, LATE_PENALTY=none|zero)
	@test -n "$(SUBMISSIONS)" || { echo "make nbgrade SUBMISSIONS=DIR: a folder of learners' folders, or the submitted/ folder nbgrader collect or zip_collect wrote"; exit 2; }
	$(PY) -m autograder nbgrade $(SUBMISSIONS) --sandbox $(SANDBOX) \
	  $(if $(DUE),--due "$(DUE)") $(if $(LATE_PENALTY),--late-penalty $(LATE_PENALTY))

handout: setup               ## build/handout.zip: what learners receive (exercises/, README)
	$(PY) -m solutions.handout --out build/handout.zip

.PHONY: classroom
classroom: setup             ## build/classroom/: a GitHub Classroom template repository (GRADER_REPO=owner/name: hidden suites)
	$(PY) -m autograder.frontends.classroom template --out build/classroom \
	  $(if $(GRADER_REPO),--mode hidden --grader-repository $(GRADER_REPO),--mode visible)

lint: setup-dev
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) build
