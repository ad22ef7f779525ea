# Two commands for a newcomer: `make grade` (grade exercises/) and `make test` (this repo's tests).
# Both create .venv and install the pinned environment on first use. `make help`, and `make`
# alone (the default goal, so that it sets nothing up), lists every target with its ## text:
# each target has one (tests/test_makefile.py holds them to it).
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
SUBMISSION ?= exercises
# Where learner code runs: bubblewrap, or (asked for by name; docs/threat-model.md)
# unsafe-process. Every grading target passes it on.
SANDBOX ?= bwrap
PY := $(VENV)/bin/python
# A value a user passes (SUBMISSION, DUE, IMAGE, ...) as one shell word, exactly as given:
# single-quoted, each ' in it written '\''. Every such value goes to its command so; TORCH
# goes to pip unquoted on purpose (a requirement and its options), and PYTEST_ARGS to pytest
# (any number of options).
quote = '$(subst ','\'',$(1))'
# The torch build the grader runs: TORCH_DEFAULT, the pinned torch's CPU build from PyTorch's
# CPU wheel index (PyPI's Linux wheel is the CUDA build, several GB of GPU libraries), unless
# TORCH says otherwise (a GPU runner: make grade-cuda TORCH="torch==2.13.0 --index-url <a
# CUDA wheel index>"). TORCH_DEFAULT is gradescope.CPU_TORCH's text, which the Gradescope zip,
# the PrairieLearn image, the Classroom workflow and the handout's README install too
# (tests/test_makefile.py holds them equal). The choice is remembered in .venv/.torch, so
# later commands without TORCH keep it; a new TORCH reinstalls, once. The default counts as
# installed where the venv's torch is its version with +cpu: it is stamped, not reinstalled.
# A stamp of the former default, a plain torch==2.13.0 (TORCH_FORMER, PyPI's build), is read
# as TORCH_DEFAULT: such a .venv moves to the CPU build once (no reinstall where it holds it
# already, one where it holds PyPI's CUDA build), then stays. So PyPI's build, asked for as
# TORCH=torch==2.13.0, is kept only while TORCH says so; name a CUDA build by its index.
TORCH_PIN := torch==2.13.0
TORCH_DEFAULT := $(TORCH_PIN) --index-url https://download.pytorch.org/whl/cpu
TORCH_FORMER := $(TORCH_PIN)
TORCH_CPU_VERSION := $(patsubst torch==%,%,$(TORCH_PIN))+cpu
TORCH_STAMP := $(VENV)/.torch
ifeq ($(origin TORCH), undefined)
TORCH := $(shell cat $(TORCH_STAMP) 2>/dev/null)
ifeq ($(TORCH),$(TORCH_FORMER))
TORCH := $(TORCH_DEFAULT)
endif
TORCH := $(or $(TORCH),$(TORCH_DEFAULT))
endif

.PHONY: FORCE help setup setup-dev sandbox grade grade-cuda test test-all lint stubs mutation benchmark clean \
	promise-mutants new-stage benchmark-batch gradescope handout seeds gpu-check browser release nbgrade benchmark-nbgrade \
	prairielearn benchmark-shards

$(VENV)/.python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	  "the grader needs Python 3.11 or newer (tomllib); $(PYTHON) is " + sys.version.split()[0] \
	  + ": run make PYTHON=python3.11 (or newer)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	touch $@

$(TORCH_STAMP): $(VENV)/.python FORCE
	@if [ "$$(cat $@ 2>/dev/null)" = $(call quote,$(TORCH)) ]; then :; \
	elif [ $(call quote,$(TORCH)) = $(call quote,$(TORCH_DEFAULT)) ] && [ "$$($(PY) -c 'from importlib.metadata import \
	    version; print(version("torch"))' 2>/dev/null)" = "$(TORCH_CPU_VERSION)" ]; then \
	  echo $(call quote,$(TORCH)) > $@; \
	else \
	  echo installing $(call quote,$(TORCH)); \
	  $(PY) -m pip install -q --force-reinstall $(TORCH) && echo $(call quote,$(TORCH)) > $@; fi

$(VENV)/.grading: requirements.txt requirements-grader.txt $(TORCH_STAMP)
	@$(MAKE) --no-print-directory sandbox
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.grading requirements-dev.txt
	@$(MAKE) --no-print-directory browser
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

help:                        ## this list: every target and what it does (also plain `make`)
	@echo "make TARGET [NAME=value ...]: the targets, in the Makefile's order (README.md says more)"
	@awk -F ':[^=]*## ' '/^[a-z][a-z0-9_-]*:[^=]*## / {printf "  make %-18s %s\n", $$1, $$2}' \
	  $(call quote,$(firstword $(MAKEFILE_LIST)))

sandbox:                     ## bubblewrap for learner code, installed where we may; fails without it (SANDBOX=unsafe-process: see docs/threat-model.md)
	@[ $(call quote,$(SANDBOX)) = unsafe-process ] || command -v bwrap >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1)); } || \
	  echo "error: bubblewrap (bwrap) is not installed, and installing it needs root and apt-get"
	@$(PY) -m autograder.boundary.launcher --sandbox $(call quote,$(SANDBOX))

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

grade: setup                 ## grade SUBMISSION (default: exercises/), stage by stage (SANDBOX=bwrap)
	$(PY) -m autograder grade $(call quote,$(SUBMISSION)) --sandbox $(call quote,$(SANDBOX))

grade-cuda: setup            ## the same on CPU and CUDA (a GPU runner: pass TORCH once, docs/grading.md says how)
	$(PY) -m autograder grade $(call quote,$(SUBMISSION)) --device cuda \
	  --sandbox $(call quote,$(SANDBOX))

# The repository's tests in two tiers (tests/conftest.py decides which test is where;
# docs/quality-gate.md): together they run every test once. Both use TEST_WORKERS
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

new-stage: setup             ## the skeleton of STAGE (already in lumen/stages.py): its probe, suites, promises, variants
	@test -n $(call quote,$(STAGE)) || { echo "make new-stage STAGE=<name>: name the stage, as in lumen/stages.py" >&2; exit 2; }
	$(PY) -m solutions.new_stage $(call quote,$(STAGE))

# ARGS: options for the tool or benchmark a target runs (make benchmark-batch ARGS="--learners
# 10"; each script's --help lists them).
mutation: setup-dev          ## mutate lumen's solution lines; every mutant must lose points
	$(PY) -m tools.mutation $(ARGS)

promise-mutants: setup-dev   ## break each docstring promise alone (its row's mutant): it must lose points on its stage only
	$(PY) -m tools.promise_mutants $(ARGS)

gpu-check: setup-dev         ## everything CUDA in a few minutes, on a GPU machine (pass TORCH once)
	$(PY) -m tools.gpu_check $(ARGS)

seeds: setup-dev             ## every variant under 50 seeds: one verdict each, or it is listed
	$(PY) -m tools.seeds --seeds 50 $(ARGS)

benchmark: setup-dev         ## speed targets, as ratios measured side by side (exit 1 when the cold grade misses 1.5x)
	$(PY) benchmarks/grade_speed.py $(ARGS)

benchmark-nbgrade: setup-dev ## make nbgrade vs. stock nbgrader autograde, seconds per learner (target: ratio <= 0.3; exit 1 when missed)
	$(PY) benchmarks/nbgrade_speed.py $(ARGS)

benchmark-batch: setup-dev   ## a class of 100 in one batch vs. one cold grade each (target 0.25; exit 1 when missed)
	$(PY) benchmarks/batch_speed.py $(ARGS)

benchmark-shards: setup-dev  ## a class as 1 shard and as 2 shards side by side on this machine: throughput and ratio (no target)
	$(PY) benchmarks/shard_speed.py $(ARGS)

# When learners see each hidden test's entry on Gradescope: hidden, after_due_date,
# after_published or visible (docs/gradescope.md).
VISIBILITY ?= after_due_date
gradescope: setup            ## build/autograder.zip: upload it to Gradescope as the autograder (VISIBILITY=after_due_date)
	$(PY) -m autograder.frontends.gradescope --out build/autograder.zip \
	  --torch $(call quote,$(TORCH)) --visibility $(call quote,$(VISIBILITY))

# PrairieLearn's question folder and grading image (docs/prairielearn.md). IMAGE: the
# image info.json names; PL_VISIBILITY: hidden (stage scores only) or visible (every check);
# PL_TORCH: what the image installs for torch (default: torch 2.13.0's CPU build).
IMAGE ?= lumen-grader:latest
PL_VISIBILITY ?= hidden
prairielearn: setup          ## build/prairielearn/: the question (info.json, question.html, tests/) and the grading image's Dockerfile
	$(PY) -m autograder.frontends.prairielearn_build build --out build/prairielearn \
	  --image $(call quote,$(IMAGE)) --visibility $(call quote,$(PL_VISIBILITY)) \
	  $(if $(PL_TORCH),--torch $(call quote,$(PL_TORCH)))

# nbgrade's options, each only when given (so the command make prints has no empty lines)
NBGRADE_OPTIONS = $(if $(DUE), --due $(call quote,$(DUE)))$(if $(LATE_PENALTY), --late-penalty $(call quote,$(LATE_PENALTY)))
nbgrade: setup               ## grade SUBMISSIONS (a folder per learner, or nbgrader collect's submitted/) through nbgrader, in build/nbgrader (DUE=, LATE_PENALTY=none|zero)
	@test -n $(call quote,$(SUBMISSIONS)) || { echo "make nbgrade SUBMISSIONS=DIR: a folder of learners' folders, or the submitted/ folder nbgrader collect or zip_collect wrote"; exit 2; }
	$(PY) -m autograder nbgrade $(call quote,$(SUBMISSIONS)) --sandbox $(call quote,$(SANDBOX))$(NBGRADE_OPTIONS)

handout: setup               ## build/handout.zip: what learners receive (exercises/, README)
	$(PY) -m solutions.handout --out build/handout.zip

.PHONY: classroom
classroom: setup             ## build/classroom/: a GitHub Classroom template repository (GRADER_REPO=owner/name: hidden suites)
	$(PY) -m autograder.frontends.classroom template --out build/classroom \
	  $(if $(GRADER_REPO),--mode hidden --grader-repository $(call quote,$(GRADER_REPO)),--mode visible)

lint: setup-dev              ## ruff over the whole repository, with pyproject.toml's rules
	$(PY) -m ruff check .

clean:                       ## remove .venv and build/: the next command sets everything up again
	rm -rf $(VENV) build
