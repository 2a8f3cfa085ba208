# legacy-hvd: set-up, training and tests.
#
#   make            build the virtual environment (.venv) with the pinned stack
#   make train      horovodrun -np 4 python -m legacy_hvd.train --batch_size=64 $(ARGS)
#   make test       the whole test suite
#
# TF_VERSION=2.18.1 selects another TensorFlow; HOROVOD_CONTROLLER=mpi builds
# Horovod with MPI as well as Gloo (installing Open MPI when run as root).
# Each combination gets its own venv (.venv-tf2.18.1, .venv-tf2.15.1-mpi)
# and its own Horovod wheel.

PYTHON ?= python3
TF_VERSION ?= 2.15.1
HOROVOD_VERSION ?= 0.28.1
HOROVOD_CONTROLLER ?= gloo
NP ?= 4
ARGS ?=

DEFAULT_TF_VERSION := 2.15.1
ifeq ($(HOROVOD_CONTROLLER),mpi)
FLAVOUR := -mpi
# Horovod's build: TensorFlow ops, MPI and Gloo controllers; CPU collectives
# follow the controller horovodrun picks (--mpi or --gloo).
HOROVOD_BUILD_ENV := HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 \
	HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1
else ifeq ($(HOROVOD_CONTROLLER),gloo)
FLAVOUR :=
# Horovod's build: TensorFlow ops, Gloo controller, no MPI, CPU collectives on Gloo.
HOROVOD_BUILD_ENV := HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 \
	HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
	HOROVOD_CPU_OPERATIONS=gloo
else
$(error HOROVOD_CONTROLLER=$(HOROVOD_CONTROLLER): expected gloo or mpi)
endif

ifeq ($(TF_VERSION)$(FLAVOUR),$(DEFAULT_TF_VERSION))
VENV ?= .venv
else
VENV ?= .venv-tf$(TF_VERSION)$(FLAVOUR)
endif

PY_TAG := $(shell $(PYTHON) -c 'import sys; print("py%d%d" % sys.version_info[:2])' 2>/dev/null)
# The Horovod wheel is compiled against one TensorFlow's C++ ABI: the cache key
# holds every version the binary depends on, so another TF never reuses it.
WHEEL_CACHE ?= $(HOME)/.cache/legacy-hvd/wheels/horovod-$(HOROVOD_VERSION)-tf$(TF_VERSION)-$(PY_TAG)$(FLAVOUR)
STAMP := $(VENV)/.legacy-hvd-installed
VPY := $(VENV)/bin/python
VBIN := $(abspath $(VENV)/bin)

.PHONY: all install check train test clean
all: install

install: $(STAMP)

$(STAMP): setup.py Makefile tools/check_env.py
	@$(PYTHON) tools/check_env.py --prerequisites --controller $(HOROVOD_CONTROLLER)
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade "pip<25" "setuptools<70" wheel
	$(VPY) -m pip install --quiet "tensorflow-cpu==$(TF_VERSION)" absl-py "cmake<4" \
		pytest matplotlib cloudpickle psutil pyyaml packaging
	@if ls $(WHEEL_CACHE)/horovod-$(HOROVOD_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "Using cached Horovod wheel from $(WHEEL_CACHE)"; \
	else \
		echo "Building horovod==$(HOROVOD_VERSION) against tensorflow-cpu==$(TF_VERSION) (a few minutes)"; \
		mkdir -p $(WHEEL_CACHE).partial && \
		PATH=$(VBIN):$$PATH $(HOROVOD_BUILD_ENV) $(VPY) -m pip wheel --no-deps \
			--no-build-isolation --no-cache-dir -w $(WHEEL_CACHE).partial \
			"horovod==$(HOROVOD_VERSION)" && \
		rm -rf $(WHEEL_CACHE) && mv $(WHEEL_CACHE).partial $(WHEEL_CACHE); \
	fi
	$(VPY) -m pip install --quiet --no-deps --force-reinstall $(WHEEL_CACHE)/horovod-$(HOROVOD_VERSION)-*.whl
	$(VPY) -m pip install --quiet --no-deps -e .
	$(VPY) tools/check_env.py --stack --controller $(HOROVOD_CONTROLLER)
	@touch $(STAMP)

check: $(STAMP)
	$(VPY) tools/check_env.py --stack --controller $(HOROVOD_CONTROLLER)

train: $(STAMP)
	PATH=$(VBIN):$$PATH horovodrun --$(HOROVOD_CONTROLLER) -np $(NP) \
		-H localhost:$(NP) python -m legacy_hvd.train --batch_size=64 $(ARGS)

test: $(STAMP)
	PATH=$(VBIN):$$PATH $(VPY) -m pytest -q tests $(ARGS)

clean:
	rm -rf .venv .venv-tf* build *.egg-info .pytest_cache
