# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==25.3
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/labrxiv demo

test: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -q

lint: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(BIN)/.installed
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/rebuild.py

clean:
	rm -rf $(VENV) .labrxiv report
