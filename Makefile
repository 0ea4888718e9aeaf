# The two commands of the README: `make run` starts the app, `make test` runs every test.
# Both create the virtual environment first if it is missing.
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup run test bench

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt

setup: $(PY)

run: $(PY)
	$(VENV)/bin/streamlit run app.py

test: $(PY)
	$(PY) -m pytest

bench: $(PY)
	$(PY) benchmarks/forward_speed.py
