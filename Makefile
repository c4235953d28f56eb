# The README's two commands: `make demo` and `make test`. Both create .venv on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
MBPP_DATASET_PATH ?= $(abspath ../shared/data/mbpp)
export MBPP_DATASET_PATH

.PHONY: venv test demo lint format bench clean

venv: $(STAMP)

# torch first, pinned: the local CPU wheel. An unpinned torch would pull gigabytes of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) -m utils.demo

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: $(STAMP)
	$(PY) -m sandbox bench --mbpp $(MBPP_DATASET_PATH)

clean:
	rm -rf $(VENV) outputs .pytest_cache .ruff_cache
