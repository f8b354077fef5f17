# The two commands: `make index` and `make test`. Each does its own set-up.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SITE   ?= site
INDEX  ?= $(SITE)/_site/knowledge/v2
QUERY  ?= 二次方程式を公式で解きたい
SHARED ?= ../shared

.PHONY: index test test-unit install install-test jekyll chromium generators node check eval bench bench-retrieval serve report docs clean

# pip's own output (notices such as setuptools' "Editable installation" one) goes to $(VENV)/pip.log,
# shown in full when an install fails; a successful install prints one line.
PIP_LOGGED = sh -c 'log=$(VENV)/pip.log; "$$@" >"$$log" 2>&1 || { cat "$$log"; echo "error: $$* failed (log: $$log)"; exit 1; }' pip

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	@$(PIP_LOGGED) $(BIN)/python -m pip install --upgrade pip

$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	@echo "Installing knowledge-build[local] into $(VENV) (pip's output: $(VENV)/pip.log)…"
	@$(PIP_LOGGED) $(BIN)/pip install -e '.[local]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "Installing knowledge-build[test] into $(VENV) (pip's output: $(VENV)/pip.log)…"
	@$(PIP_LOGGED) $(BIN)/pip install -e '.[test]'
	touch $@ $(VENV)/.installed-local

install: $(VENV)/.installed-local

install-test: $(VENV)/.installed-test jekyll chromium generators node

# Jekyll 4 from Debian, for the tests that run a real `jekyll build`.
jekyll:
	@command -v jekyll >/dev/null 2>&1 || { \
	  echo "Installing Jekyll (Debian package)…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq jekyll >/dev/null; }

# Node.js (Debian's nodejs, 18 or newer) for tests/test_js_example.py, which runs examples/search_knowledge.mjs.
node:
	@command -v node >/dev/null 2>&1 || { \
	  echo "Installing Node.js (Debian package nodejs)…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs >/dev/null; }

# Debian's Chromium (and its driver), for the `browser` tests that open pages through playwright;
# playwright's own browser download is never used. And a Japanese font, so that the search box's
# screenshot (docs/images/search-box.png, made by tests/test_search_box_browser.py) shows its text.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Chromium (Debian packages)…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }
	@fc-list :lang=ja 2>/dev/null | grep -q . || { \
	  echo "Installing a Japanese font (Debian package fonts-ipafont-gothic)…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq fonts-ipafont-gothic >/dev/null; }

# The generators of tests/generated_sites, which builds one site with each: Debian's hugo here,
# jekyll from its target above, mkdocs, mkdocs-material and sphinx from the test extra.
generators: $(VENV)/.installed-test jekyll
	@command -v hugo >/dev/null 2>&1 || { \
	  echo "Installing Hugo (Debian package)…"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq hugo >/dev/null; }

index: install
	$(BIN)/knowledge-build build --site $(SITE)
	$(BIN)/knowledge-build search "$(QUERY)" --index $(INDEX)

# PYTHONDONTWRITEBYTECODE is cleared for the suite: with it set (some machines' environments do), every one of
# its Python processes (workers and the CLI subprocesses tests start) compiles the package, and pytest rewrites
# every test module, from source again; the bytecode goes to the __pycache__ folders git ignores.
test: install-test
	PYTHONDONTWRITEBYTECODE= KB_SHARED_DIR=$(abspath $(SHARED)) $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The unit selection: every test that needs no model, database, browser, generator, corpus or slow tool
# (pyproject.toml's markers), so it needs only the test extra; it says how long it took. Two workers per core:
# its slowest tests wait (servers, signals, subprocesses) rather than compute (2 cores: 115 s with 2 workers,
# 101 s with 3, 92 s with 4).
UNIT = not model and not db and not browser and not generators and not corpus and not slow

test-unit: $(VENV)/.installed-test
	@start=$$(date +%s); \
	PYTHONDONTWRITEBYTECODE= KB_TEST_WORKERS=$${KB_TEST_WORKERS:-$$(( $$(nproc) * 2 ))} \
	KB_SHARED_DIR=$(abspath $(SHARED)) $(BIN)/python -m pytest -q -m "$(UNIT)" $(PYTEST_ARGS); status=$$?; \
	echo "make test-unit: $$(( $$(date +%s) - start )) s wall"; exit $$status

check: install
	$(BIN)/knowledge-build check --site $(SITE)

eval: install
	$(BIN)/knowledge-build eval --index $(INDEX) --dataset data/eval/site_queries.jsonl \
		--baseline data/eval/site_baseline.json --fail-on-regression --output-dir reports/eval

serve: install
	@$(PIP_LOGGED) $(BIN)/pip install -e '.[mcp]'
	$(BIN)/knowledge-build serve --index $(INDEX) --transport http

report: install
	$(BIN)/knowledge-build report --site $(SITE) --out reports/coverage.html

# Benchmarks (bench/README.md lists every script, what it measures and where its figures go).
# `make bench`: the speed suite on the reference corpus (docs/benchmarks.md).
# `make bench-retrieval`: retrieval quality, the ablation and JSQuAD (docs/retrieval.md).
# The other scripts take indexes built by hand, JSQuAD sizes or an hour (bench_scale): run them by hand.
# KB_SHARED_DIR: the scripts' default data (the dev queries) comes from $(SHARED) too.
BENCH_RUN = KB_SHARED_DIR=$(abspath $(SHARED)) $(BIN)/python

bench: install
	$(BENCH_RUN) bench/bench_build.py $(SHARED)/corpus/school_asset
	$(BENCH_RUN) bench/bench_rebuild.py $(SHARED)/corpus/school_asset
	$(BENCH_RUN) bench/bench_ids.py $(SHARED)/corpus/school_asset
	$(BENCH_RUN) bench/bench_service.py $(SHARED)/corpus/school_asset

bench-retrieval: install
	$(BENCH_RUN) bench/retrieval/ablation.py $(SHARED)/corpus/school_asset $(SHARED)/eval/dev_queries.jsonl
	$(BENCH_RUN) bench/retrieval/bench_jsquad.py $(SHARED)/corpus/jsquad/valid-v1.3.json

# The manual (docs/, mkdocs.yml): its generated reference pages written from the code, then built into site-docs/
# with `mkdocs build --strict` (a broken link or anchor fails) and indexed for its search box (the local model).
# MkDocs and Material come with the test extra.
docs: $(VENV)/.installed-test
	$(BIN)/python tools/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/knowledge-build build --site site-docs

clean:
	rm -rf $(SITE)/_site $(SITE)/.jekyll-cache .pytest_cache reports site-docs
