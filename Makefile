# The two commands of the README (`make check`, `make test`) create the environment on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.flinkspec-installed

.PHONY: check test test-slow env clean flink-env trace-check

$(STAMP): pyproject.toml setup.py model/_native.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "flinkspec: installing the environment into $(VENV) (first run only)..."
	@$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

env: $(STAMP)

## The main job: verify the model (suites, proofs, a short Spark replay) and print a summary.
check: $(STAMP)
	@$(VENV)/bin/flinkspec verify

## The default test run (slow suites excluded), on every core (pytest-xdist: one worker per core,
## a test file's tests kept on one worker so what a module computes once is computed once). The
## browser tests need chromium: installed from the system's packages when this runs as root, else
## one line says how.
test: $(STAMP)
	@bash tools/ensure-chromium.sh
	@$(PY) -m pytest -m "not slow" -q -n auto --dist loadfile

test-slow: $(STAMP)
	@bash tools/ensure-chromium.sh
	@bash tools/ensure-zookeeper.sh
	@$(PY) -m pytest -m slow -q

## Real Apache Flink (jars via apache-flink) in its own venv, for the differential tests
## (tests/differential, marked slow+flink). Kept apart: apache-flink pins clash with pyspark.
FLINK_VENV := .venv-flink
$(FLINK_VENV)/.flink-installed:
	@test -x $(FLINK_VENV)/bin/python || $(PYTHON) -m venv $(FLINK_VENV)
	@echo "flinkspec: installing apache-flink into $(FLINK_VENV) (~850 MB, ~2 min, first run only)..."
	@$(FLINK_VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
	@$(FLINK_VENV)/bin/python -m pip install -q --disable-pip-version-check apache-flink
	@touch $@

flink-env: $(FLINK_VENV)/.flink-installed

## Record a small batch of real Flink runs under every fault kind and validate them against the
## model (docs/conformance.md, "Trace validation"); the traces go to a new folder under results/.
TRACE_RUNS ?= 12
trace-check: $(STAMP) $(FLINK_VENV)/.flink-installed
	@bash tools/ensure-zookeeper.sh
	@out=results/trace-check-$$(date -u +%Y%m%dT%H%M%SZ); \
	$(VENV)/bin/flinkspec trace --runs $(TRACE_RUNS) --out $$out && $(VENV)/bin/flinkspec validate $$out

clean:
	rm -rf $(VENV) .hypothesis build *.egg-info
