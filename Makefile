# gpufleet.llm_stack: build, lint and test entry points.
#
#   make test        everything CI runs (.ci/run calls exactly this)
#   make site        run site.yml on the bundled local test fleet
#   make site-down   remove the test fleet's containers
#   make setup       the venv, the Docker engine, the test images and the
#                    collection link, for `molecule test` and ansible-playbook
#                    from the repository root (make site and make test run it)
#   make docs        regenerate the role READMEs' variable tables from the
#                    argument specs (make lint fails when one has drifted)
#   make matrix      read the vLLM releases (torch pin, Python and transformers
#                    ranges, wheel CUDA) and the torch and transformers releases
#                    from the package index (MATRIX_INDEX_URL, default PyPI),
#                    rewrite the generated block of compat_matrix.py, print the
#                    diff and render docs/compat-matrix.md (tests/matrix/refresh.py)
#   make vllm-options  record the options of `vllm serve` of every vLLM release of
#                    the matrix from its wheel on the package index into
#                    plugins/module_utils/_vllm_options_recorded.py (tests/vllm/record_options.py;
#                    needs the vLLM scenario's wheelhouses)
#
# Each step is a script under tests/ci/ and can be run alone; `make test`
# runs venv engine images collection changelog in order, then the rest two
# at a time (tests/ci/pool.sh, CI_JOBS=2), and prints how long each took:
#   fixtures core-latest lint sanity unit build, each molecule scenario and
#   awx (the scenarios and awx once the fixtures are built). fixtures builds the controller-side test fixtures, side by
#   side, from an empty .cache/ in CI (tests/ci/fixtures.sh, as make site).
# awx runs the site job through ansible-runner as concurrent AWX job slices.
# core-latest runs lint, sanity, unit and the preflight scenario on the
# current ansible-core (2.21, Python 3.12) in .venv-core-latest; make test
# runs every other scenario on the pinned one.
# Subsets: make molecule SCENARIOS="preflight cuda_toolkit"
#          make sanity SANITY_TESTS="pep8 pylint"
#          make unit PYTEST_ARGS="-k nvidia"

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
# Steps depend on each other's side effects (venv, engine, images): never
# run them in parallel, whatever -j says.
.NOTPARALLEL:

CI := tests/ci
STEP := $(CI)/step.sh

# Each make invocation starts its own timing table (build/ci/timings.tsv).
ifeq ($(MAKELEVEL),0)
$(shell rm -f build/ci/timings.tsv build/ci/molecule-times.tsv; mkdir -p build/ci; date +%s >build/ci/started)
endif

.PHONY: help test setup venv engine images collection lint changelog-lint sanity unit build \
	fixtures molecule awx core-latest site site-down docs matrix vllm-options bench clean

help:
	@sed -n '2,/^$$/p' Makefile | sed -e '/^$$/d' -e 's/^# \{0,1\}//'

# Two at a time, longest first: the fixtures (mostly downloads) beside
# core-latest, then the scenarios (which wait for the fixtures) and the
# checks, so that neither slot idles while the other ends its part. Each
# step's log is printed whole when it ends (build/ci/logs/).
test: venv engine images collection changelog-lint
	@$(CI)/pool.sh fixtures core-latest molecule/default molecule/serving_fleet molecule/vllm sanity molecule unit lint awx build
	@$(CI)/summary.sh

setup: venv engine images collection

venv:
	@$(STEP) venv $(CI)/venv.sh

engine:
	@$(STEP) engine $(CI)/engine.sh

images: engine
	@$(STEP) images $(CI)/images.sh

collection:
	@$(STEP) collection $(CI)/collection.sh

changelog-lint: venv
	@$(STEP) changelog $(CI)/changelog.sh

lint: venv collection changelog-lint
	@$(STEP) lint $(CI)/lint.sh

sanity: venv
	@$(STEP) sanity $(CI)/sanity.sh

unit: venv collection
	@$(STEP) unit $(CI)/unit.sh

build: venv
	@$(STEP) build $(CI)/build.sh

fixtures: venv
	@$(STEP) fixtures $(CI)/fixtures.sh

molecule: venv engine images collection fixtures
	@$(STEP) molecule $(CI)/molecule.sh

awx: venv engine images collection fixtures
	@$(STEP) awx $(CI)/awx.sh

core-latest: venv engine images collection
	@$(STEP) core-latest $(CI)/core_latest.sh

# The quick start's main job on the bundled local test fleet (CPU-only
# test hosts in containers, inventories/testfleet).
site: venv engine images collection
	@$(CI)/site.sh

site-down: venv
	@$(CI)/fleet.sh down

docs: venv
	@$(CI)/docs.sh

# Reads the package index (network); changes only compat_matrix.py's
# generated block and docs/compat-matrix.md.
matrix: venv collection
	@source $(CI)/lib.sh && use_venv && python tests/matrix/refresh.py && \
		python tests/unit/compat_doc.py >docs/compat-matrix.md

# Reads the package index (network, a wheel of 240 to 430 MB per release, kept in
# .cache/vllm-options); changes only the generated block of _vllm_options_recorded.py.
vllm-options: venv collection
	@source $(CI)/lib.sh && use_venv && python tests/vllm/record_options.py

# The simulated fleet runs in containers: the engine, the image and the
# collection's link are made first, as for the scenarios.
bench: venv engine images collection
	@source $(CI)/lib.sh && use_venv && tests/bench/run

# Removes what the steps build inside the repo (not .venv, not the images).
clean:
	rm -rf build .cache
