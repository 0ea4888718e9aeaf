# The README's two commands: `make run` starts the app, `make test` runs every test.
# Both first create the virtual environment (and reinstall when requirements.txt changes).
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test bench train

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/forward_speed.py
	$(PY) benchmarks/page_speed.py

train: $(STAMP)
	$(PY) scripts/train_models.py
