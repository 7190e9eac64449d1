# The two commands: `make demo` and `make test`. Everything installs itself into .venv.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

DEMO_NAMESPACE ?= demo

.PHONY: install demo test dev bench lint dagster-home clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

dagster-home:
	mkdir -p $(DAGSTER_HOME)
	test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: install dagster-home
	$(PY) -m pipeline index --namespace $(DEMO_NAMESPACE) --input samples/demo
	$(PY) -m pipeline status --namespace $(DEMO_NAMESPACE)
	@echo; echo "== vector search: 'Marley was dead, to begin with' =="
	$(PY) -m pipeline query vector --namespace $(DEMO_NAMESPACE) --top-k 3 "Marley was dead, to begin with."

test: install
	$(PY) -m pytest -q

dev: install dagster-home
	$(VENV)/bin/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

bench: install
	$(PY) bench/run_all.py

lint: install
	$(VENV)/bin/ruff check pipeline assets tests bench
	$(VENV)/bin/ruff format --check pipeline assets tests bench

clean:
	rm -rf $(VENV) .dagster_home data/storage .pytest_cache
