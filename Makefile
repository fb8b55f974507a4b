# Two entry points (see README): `make demo` and `make test`. Both set everything up from project files.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp
PIP    := $(PY) -m pip install -q -c constraints.txt

.PHONY: setup system-deps demo test lint layers bench mutants clean

setup: $(STAMP)

# Debian libraries Blender's Workbench engine needs for headless EGL rendering (pixel environments), and
# chromium, the browser the `causalplay serve` tests drive through Playwright (executable /usr/bin/chromium), and
# postgresql, whose server binaries tests/test_serve_postgres.py starts in a temporary folder.
system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  dpkg -s libegl1 libegl-mesa0 libgl1-mesa-dri libxkbcommon0 libsm6 libxi6 libxxf86vm1 libxfixes3 libxrender1 chromium postgresql >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      libegl1 libegl-mesa0 libgl1-mesa-dri libxkbcommon0 libsm6 libxi6 libxxf86vm1 libxfixes3 libxrender1 chromium postgresql >/dev/null; }; \
	else echo "system-deps: not root or no apt-get; install libegl1 libegl-mesa0 libgl1-mesa-dri for pixel rendering, chromium and postgresql for the serve tests"; fi

$(STAMP): pyproject.toml constraints.txt
	$(MAKE) system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PIP) torch==2.13.0 numpy==1.26.4
	$(PIP) -e ".[all,dev]"
	touch $(STAMP)

# The demo needs the package alone (no extras): a first `make demo` installs torch (CPU) and the core stack only.
$(DEMO_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PIP) torch==2.13.0 numpy==1.26.4
	$(PIP) -e .
	touch $(DEMO_STAMP)

demo:
	@if [ ! -f $(STAMP) ] || [ pyproject.toml -nt $(STAMP) ] || [ constraints.txt -nt $(STAMP) ]; then $(MAKE) $(DEMO_STAMP); fi
	$(VENV)/bin/causalplay demo

test: setup layers
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check .

# The layer contract of pyproject.toml, checked on a copy laid out as installed (models/ and envs/ inside
# causalplay/, where the import graph can see them).
layers: setup
	rm -rf build/layers && mkdir -p build/layers
	cp -r causalplay build/layers/ && cp -r models build/layers/causalplay/models && cp -r envs build/layers/causalplay/envs
	cd build/layers && PYTHONPATH=. $(abspath $(VENV))/bin/lint-imports $(CURDIR)/pyproject.toml

bench: setup
	$(PY) benchmarks/bench_infer.py

# Mutation testing of the core modules (mutmut, the `mutation` extra; not part of `make test`: it takes tens of
# minutes). `make mutants MODULES="eig machine"` runs some; results in runs/mutants/<module>/results.json and
# docs/testing.md.
MODULES ?=
mutants: setup
	$(PIP) -e ".[mutation]"
	nice -n 10 $(PY) tools/mutants.py $(MODULES)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
