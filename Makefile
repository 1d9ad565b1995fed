# The two commands a newcomer needs; each creates the environment it runs in.
#   make tune   - the main job: a tuning study of the Hopper GEMM on its embedded default shapes
#   make test   - the test suite (what CI runs)
# Python 3.12 where the machine has one (the GPU machines run 3.12; the Blackwell simulator's
# wheel needs it), else python3 (3.11 or newer). pyenv's shims exist even where they fail: run each.
PY ?= $(shell for p in python3.12 $$(pyenv root 2>/dev/null)/versions/3.12*/bin/python3.12 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
VENV := .venv
STAMP := $(VENV)/.installed
# The Blackwell simulator NumSim (README, "Blackwell"), on Python 3.12+ only. Its wheel pins
# packages that clash with ours and that NumSim never imports, so it goes in without them,
# next to the one package it does import that we lack.
NUMSIM := "tirx-harness==0.1.2.post2; python_version >= '3.12'" \
	"threadpoolctl>=3.6,<4; python_version >= '3.12'"

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[test]"
	touch $(STAMP)

$(VENV)/.numsim: $(STAMP)
	$(VENV)/bin/pip install -q --no-deps $(NUMSIM)
	touch $@

.PHONY: env tune test gpu-bundle
env: $(STAMP) $(VENV)/.numsim

tune: $(STAMP)
	$(VENV)/bin/autotune tune gemm_sm90 --trials $(or $(TRIALS),8)

test: $(STAMP) $(VENV)/.numsim
	$(VENV)/bin/python -m pytest -q

# What the GPU machines lack (optuna, ray) for CPython 3.12, outside git: see README.
gpu-bundle: $(STAMP)
	$(VENV)/bin/python scripts/device_bundle.py --with-tvm
	$(VENV)/bin/python tests/tirx_kernels.py .prebuilt
