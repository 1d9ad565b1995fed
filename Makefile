# The two commands a newcomer needs; each creates the environment it runs in.
#   make tune   - the main job: a tuning study of the Hopper GEMM on its embedded default shapes
#   make test   - the test suite (what CI runs)
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[test]"
	touch $(STAMP)

.PHONY: env tune test gpu-bundle
env: $(STAMP)

tune: $(STAMP)
	$(VENV)/bin/autotune tune gemm_sm90 --trials $(or $(TRIALS),8)

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

# What the GPU machines lack (optuna, ray) for CPython 3.12, outside git: see README.
gpu-bundle: $(STAMP)
	$(VENV)/bin/python scripts/device_bundle.py --with-tvm
	$(VENV)/bin/python tests/tirx_kernels.py .prebuilt
