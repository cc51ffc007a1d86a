# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

PIP_VERSION := 25.3
# The exact versions of every package `make demo` and `make test` install (dev tools
# included); pyproject.toml holds the ranges they were resolved from.
LOCK := requirements.lock

.PHONY: demo test lint lock bench dashboards clean

$(BIN)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==$(PIP_VERSION)
	$(BIN)/pip install --quiet -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# Resolve pyproject.toml's ranges afresh (the newest releases inside them) in a scratch
# virtualenv and write what was installed to the lock; commit it with the change.
lock:
	set -e; scratch=$$(mktemp -d); trap 'rm -rf "$$scratch"' EXIT; \
	$(PYTHON) -m venv "$$scratch"; \
	"$$scratch/bin/pip" install --quiet --upgrade pip==$(PIP_VERSION); \
	"$$scratch/bin/pip" install --quiet -e '.[dev]'; \
	{ echo "# Written by \`make lock\` from pyproject.toml's ranges; \`make demo\` and \`make test\` install it."; \
	  "$$scratch/bin/pip" freeze --exclude-editable; } > $(LOCK)

demo: $(BIN)/.installed
	$(BIN)/labrxiv demo
	@echo
	@echo "The demo's data is in .labrxiv/demo. Next, try (or 'source $(BIN)/activate' first):"
	@echo "  export LABRXIV_DATA_DIR=.labrxiv/demo"
	@echo "  $(BIN)/labrxiv campaigns                  # the two campaigns: isolated and archive"
	@echo "  $(BIN)/labrxiv runs                       # their labs' runs"
	@echo "  $(BIN)/labrxiv runs show RUN              # one run (an id from 'runs')"
	@echo "  $(BIN)/labrxiv papers top noisy-digits"
	@echo "  $(BIN)/labrxiv papers search small_loss smoothing"
	@echo "  $(BIN)/labrxiv events tail --type paper.submitted"
	@echo "  $(BIN)/labrxiv replay RUN                     # a run step by step, from the log"
	@echo "  $(BIN)/labrxiv analyze CAMPAIGN --html a.html # behaviour, findings, a page to open"
	@echo "  $(BIN)/labrxiv campaign --task continual-digits --labs 3 --review grounded --review-rounds 1"
	@echo "                                              # papers reviewed, decided and revised"

# The suite in TEST_WORKERS processes (pytest-xdist; each has its own redis-server and
# PostgreSQL databases); `make test TEST_WORKERS=0` runs it in this one process.
TEST_WORKERS ?= 2

# The benchmarks are type-checked too (nothing else runs them between measurements):
# each is a script importing its neighbours and the tests' fake model server.
MYPY_BENCH := MYPYPATH=bench:tests/llm $(BIN)/mypy --explicit-package-bases bench

test: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(MYPY_BENCH)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=30

lint: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BIN)/mypy
	$(MYPY_BENCH)

bench: $(BIN)/.installed
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/rebuild.py

# Regenerate grafana/dashboards/*.json from grafana/dashboards_src/ (commit both).
dashboards: $(BIN)/.installed
	$(BIN)/python -m grafana.build

clean:
	rm -rf $(VENV) .labrxiv report
