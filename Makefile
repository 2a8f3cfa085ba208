# legacy-hvd: set-up, training and tests.
#
#   make            build the virtual environment (.venv) with the pinned stack
#   make train      horovodrun -np 4 python -m legacy_hvd.train --batch_size=64 $(ARGS)
#   make test       the whole test suite (TESTS=... some of it: files, folders)
#   make test-fast  the unit tests alone (tests/unit: in-process, under a minute)
#
# TF_VERSION=2.18.1 selects another TensorFlow (each has its pins in
# constraints/tf-<version>.txt); TF_VERSION=1.15.5 the TF1 stack, on Python 3.7 (its tests use the default stack too, for the
# cross-stack tests). HOROVOD_CONTROLLER=mpi builds Horovod with MPI as well
# as Gloo (installing Open MPI when run as root). Each combination gets its
# own venv (.venv-tf2.18.1, .venv-tf1.15.5, .venv-tf2.15.1-mpi) and its own
# Horovod wheel. HOROVOD_GPU_OPERATIONS=NCCL is the GPU flavour
# (.venv-tf2.15.1-nccl; docs/gpu.md): TensorFlow's GPU wheel with its CUDA
# wheels, Horovod built with NCCL against the CUDA toolkit at CUDA_HOME.

PYTHON ?= python3
TF_VERSION ?= 2.15.1
HOROVOD_VERSION ?= 0.28.1
HOROVOD_CONTROLLER ?= gloo
# Empty: the CPU stacks. NCCL: the GPU flavour, Horovod's own variable and value.
HOROVOD_GPU_OPERATIONS ?=
# The CUDA toolkit whose nvcc compiles Horovod's few CUDA kernels (GPU
# flavour): the user's CUDA_HOME, else the toolkit of the nvcc on PATH (a
# cluster's `module load cuda`; nvcc says where its toolkit is, as a wrapper
# script on PATH would not), else CUDA's default place.
CUDA_HOME ?= $(or $(realpath $(shell nvcc --dryrun -c -x cu /dev/null -o /dev/null 2>&1 | \
	sed -n 's/^#\$$ TOP=//p')),/usr/local/cuda)
NP ?= 4
ARGS ?=
TESTS ?= tests

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
# The GPU flavour: NCCL for GPU tensors beside the controller's CPU
# collectives. NCCL comes from the nvidia-nccl-cu12 wheel TensorFlow's
# and-cuda extra installs (its libnccl.so.2, found through the venv by
# tools/horovod_gpu.cmake's run path); cudart is linked statically by nvcc's
# toolkit, so the library loads on a host without a GPU driver.
# The GPUs Horovod's kernels are compiled for: Turing to Hopper, what CUDA 13's
# nvcc still targets (it dropped Maxwell, Pascal and Volta).
CUDA_ARCHS ?= 75,80,86,89,90
ifeq ($(HOROVOD_GPU_OPERATIONS),NCCL)
FLAVOUR := $(FLAVOUR)-nccl
# The wheel depends on NCCL's version (TensorFlow's pin, in the stack's
# constraints) and on the toolkit's CUDA (static cudart): both are in its
# cache key.
TF_CUDA = $(call pin,nvidia-cuda-runtime-cu12)
NCCL_VERSION = $(call pin,nvidia-nccl-cu12)
TOOLKIT_CUDA := $(shell $(CUDA_HOME)/bin/nvcc --version 2>/dev/null | \
	sed -n 's/.*release \([0-9.]*\),.*/\1/p')
WHEEL_KEY = $(FLAVOUR)$(NCCL_VERSION)-cuda$(TOOLKIT_CUDA)
NCCL_HOME = $(abspath $(VENV))/nccl-build
GPU_BUILD_ENV = HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_CUDA_HOME=$(CUDA_HOME) \
	HOROVOD_NCCL_HOME=$(NCCL_HOME) HOROVOD_NCCL_LINK=SHARED \
	HOROVOD_BUILD_CUDA_CC_LIST=$(CUDA_ARCHS)
HOROVOD_TOOLCHAIN := tools/horovod_gpu.cmake
GPU_FLAG = --gpu --cuda-home $(CUDA_HOME) --tf-cuda=$(TF_CUDA)
else ifneq ($(HOROVOD_GPU_OPERATIONS),)
$(error HOROVOD_GPU_OPERATIONS=$(HOROVOD_GPU_OPERATIONS): expected NCCL (the GPU flavour) or nothing (CPU))
else
HOROVOD_TOOLCHAIN := tools/horovod_release.cmake
WHEEL_KEY = $(FLAVOUR)
endif

# Each stack's pins live in one file, constraints/tf-$(TF_VERSION).txt, that
# every pip install below is constrained by. TF 1.15, the legacy clusters'
# own stack, ships wheels for Python 3.5-3.7 only, as `tensorflow` (CPU and
# GPU in one); the TF 2 stacks use `tensorflow-cpu`, the GPU flavour
# `tensorflow[and-cuda]` (the same version, its CUDA 12 wheels pinned by it).
CONSTRAINTS := constraints/tf-$(TF_VERSION).txt
pin = $(shell sed -n 's/^$(1)==//p' $(CONSTRAINTS))
ifeq ($(wildcard $(CONSTRAINTS)),)
$(error TF_VERSION=$(TF_VERSION): no $(CONSTRAINTS); expected one of: $(patsubst constraints/tf-%.txt,%,$(wildcard constraints/tf-*.txt)))
endif
ifeq ($(firstword $(subst ., ,$(TF_VERSION))),1)
# The first Python 3.7 that runs: on PATH (a pyenv shim may not), else pyenv's.
PYTHON := $(shell for p in python3.7 $$(pyenv root 2>/dev/null)/versions/3.7.*/bin/python3.7; \
	do "$$p" -c "" 2>/dev/null && { command -v "$$p"; break; }; done)
NO_PYTHON := TensorFlow $(TF_VERSION) needs Python 3.7 and none was found \
	(python3.7 on PATH, or pyenv's): install one, e.g. 'pyenv install 3.7.16'
TF_REQUIREMENTS := tensorflow protobuf numpy h5py importlib_metadata
# The cross-stack tests (checkpoints and exports moving between TF 1.15 and
# the default TF 2) run here, with the default stack's Python beside.
CROSS_STACK := $(abspath .venv)
else
# TensorBoard: tf.summary (the eval run, progress) needs it, and TF >= 2.20
# no longer requires it (before, TensorFlow's own dependency, so no change).
TF_REQUIREMENTS := $(if $(GPU_FLAG),"tensorflow[and-cuda]==$(TF_VERSION)",tensorflow-cpu) tensorboard
endif
# TF >= 2.16 puts Keras 3 behind tf.keras, which Horovod 0.28.1's Keras
# integration predates: the fit variant (legacy_hvd.train_keras) runs on
# tf_keras of TensorFlow's minor version instead (docs/stacks.md), pinned in
# the stack's constraints. --no-deps: tf_keras requires `tensorflow`, which
# would install beside tensorflow-cpu.
TF_KERAS := $(if $(shell grep -s '^tf_keras' $(CONSTRAINTS)),tf_keras)
# Horovod 0.28.1 is the last release and does not build against TF >= 2.20
# (missing XLA and highwayhash headers, measured): those stacks get no
# Horovod wheel, and their trainer is legacy_hvd.train_mwms; the suite skips
# the tests that need Horovod there (tests/conftest.py). WITH_HOROVOD is
# `yes` for TF 1.x and TF 2.0-2.19, empty from 2.20 on.
TF_MAJOR := $(word 1,$(subst ., ,$(TF_VERSION)))
TF_MINOR := $(word 2,$(subst ., ,$(TF_VERSION)))
WITH_HOROVOD := $(shell [ $(TF_MAJOR) -eq 1 ] || { [ $(TF_MAJOR) -eq 2 ] && \
	[ $(TF_MINOR) -lt 20 ]; } && echo yes)
NO_HOROVOD_FLAG := $(if $(WITH_HOROVOD),,--no-horovod)

ifeq ($(TF_VERSION)$(FLAVOUR),$(DEFAULT_TF_VERSION))
VENV ?= .venv
else
VENV ?= .venv-tf$(TF_VERSION)$(FLAVOUR)
endif

PY_TAG := $(if $(PYTHON),$(shell $(PYTHON) -c 'import sys; print("py%d%d" % sys.version_info[:2])' 2>/dev/null))
# The Horovod wheel is compiled against one TensorFlow's C++ ABI: the cache key
# holds every version the binary depends on, so another TF never reuses it.
WHEEL_CACHE ?= $(HOME)/.cache/legacy-hvd/wheels/horovod-$(HOROVOD_VERSION)-tf$(TF_VERSION)-$(PY_TAG)$(WHEEL_KEY)
# Horovod's build runs make with -j8 only when MAKEFLAGS is empty; under
# `make TF_VERSION=...` it holds that variable, and the build would run on
# one core: it gets its jobs explicitly. It compiles without debug
# information (tools/horovod_release.cmake says why).
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
STAMP := $(VENV)/.legacy-hvd-installed
VPY := $(VENV)/bin/python
VBIN := $(abspath $(VENV)/bin)

.PHONY: all install check train test test-fast clean
all: install

install: $(STAMP)

$(STAMP): setup.py Makefile tools/check_env.py $(CONSTRAINTS)
	@test -n "$(PYTHON)" || { echo "make: $(NO_PYTHON)" >&2; exit 1; }
	@$(PYTHON) tools/check_env.py --prerequisites --controller $(HOROVOD_CONTROLLER) \
		--tf-version $(TF_VERSION) $(NO_HOROVOD_FLAG) $(GPU_FLAG)
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade -c $(CONSTRAINTS) pip setuptools wheel
	$(VPY) -m pip install --quiet -c $(CONSTRAINTS) $(TF_REQUIREMENTS) absl-py cmake \
		pytest pytest-xdist matplotlib cloudpickle psutil pyyaml packaging
	$(if $(TF_KERAS),$(VPY) -m pip install --quiet --no-deps -c $(CONSTRAINTS) $(TF_KERAS))
ifdef WITH_HOROVOD
	@if ls $(WHEEL_CACHE)/horovod-$(HOROVOD_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "Using cached Horovod wheel from $(WHEEL_CACHE)"; \
	else \
		echo "Building horovod==$(HOROVOD_VERSION) against tensorflow==$(TF_VERSION) (a few minutes)"; \
		$(if $(GPU_FLAG),$(VPY) tools/check_env.py --nccl-build-dir $(NCCL_HOME) &&) \
		mkdir -p $(WHEEL_CACHE).partial && \
		PATH=$(VBIN):$$PATH $(HOROVOD_BUILD_ENV) $(GPU_BUILD_ENV) MAKEFLAGS=-j$(BUILD_JOBS) \
			CMAKE_TOOLCHAIN_FILE=$(abspath $(HOROVOD_TOOLCHAIN)) \
			$(VPY) -m pip wheel --no-deps \
			--no-build-isolation --no-cache-dir -w $(WHEEL_CACHE).partial \
			"horovod==$(HOROVOD_VERSION)" && \
		rm -rf $(WHEEL_CACHE) && mv $(WHEEL_CACHE).partial $(WHEEL_CACHE); \
	fi
	$(VPY) -m pip install --quiet --no-deps --force-reinstall $(WHEEL_CACHE)/horovod-$(HOROVOD_VERSION)-*.whl
else
	@echo "No Horovod on TensorFlow $(TF_VERSION): Horovod $(HOROVOD_VERSION) does not build against TF >= 2.20"
endif
	$(VPY) -m pip install --quiet --no-deps -e .
	$(VPY) tools/check_env.py --stack --controller $(HOROVOD_CONTROLLER) $(NO_HOROVOD_FLAG) $(GPU_FLAG)
	@touch $(STAMP)

check: $(STAMP)
	$(VPY) tools/check_env.py --stack --controller $(HOROVOD_CONTROLLER) $(NO_HOROVOD_FLAG) $(GPU_FLAG)

train: $(STAMP)
ifndef WITH_HOROVOD
	@echo "make: no horovodrun on TensorFlow $(TF_VERSION) (Horovod $(HOROVOD_VERSION) does not build against TF >= 2.20); run legacy_hvd.train_mwms under legacy_hvd.launch.workers (README.md)" >&2; exit 1
endif
	PATH=$(VBIN):$$PATH horovodrun --$(HOROVOD_CONTROLLER) -np $(NP) \
		-H localhost:$(NP) python -m legacy_hvd.train --batch_size=64 $(ARGS)

# The TF 1.15 run leaves the tests marked one_stack (tests/conftest.py) to
# the default stack's: each assertion runs once per CI run. Two pytest
# workers: the tests on the test hosts in one, the local ones in the other
# (tests/conftest.py groups them).
PYTEST = $(VPY) -m pytest -q --durations=20 -n 2 --dist loadgroup
test: $(STAMP)
ifdef CROSS_STACK
	$(MAKE) install TF_VERSION=$(DEFAULT_TF_VERSION) HOROVOD_CONTROLLER=gloo VENV=$(CROSS_STACK)
	PATH=$(VBIN):$$PATH LEGACY_HVD_TF2_PYTHON=$(CROSS_STACK)/bin/python \
		$(PYTEST) -m "not one_stack" $(TESTS) $(ARGS)
else
	PATH=$(VBIN):$$PATH $(PYTEST) $(TESTS) $(ARGS)
endif

# The fast loop: tests/unit, the tests that need no process of their own
# (tests/jobs runs local horovodrun jobs, tests/hosts the test hosts and
# Slurm). One process: starting xdist's workers would cost more than it saves.
test-fast: $(STAMP)
	PATH=$(VBIN):$$PATH $(VPY) -m pytest -q --durations=10 \
		$(if $(CROSS_STACK),-m "not one_stack") tests/unit $(ARGS)

clean:
	rm -rf .venv .venv-tf* build *.egg-info .pytest_cache

# Container images, one per stack (Containerfile): `make image
# [TF_VERSION=...]` tags legacy-hvd:tf$(TF_VERSION), with
# HOROVOD_GPU_OPERATIONS=NCCL the GPU image (docs/gpu.md). tools/images.py installs
# podman where missing and makes the base image where no registry has it; the
# cached Horovod wheel of the image's Python goes into the build context
# (.image-wheels/), so the build stage compiles nothing. The podman build line
# is printed for users without make; docker build takes its build arguments.
# --uts=host: with the host's network, a build step's own hostname does not
# resolve, and Horovod's check in the build needs it to.
IMAGE_PYTHON := $(if $(filter 1,$(TF_MAJOR)),3.7,3.11)
IMAGE_TAG ?= legacy-hvd:tf$(TF_VERSION)$(FLAVOUR)
IMAGE_WHEELS := $(HOME)/.cache/legacy-hvd/wheels/horovod-$(HOROVOD_VERSION)-tf$(TF_VERSION)-py$(subst .,,$(IMAGE_PYTHON))$(WHEEL_KEY)
# The GPU image: the toolkit at CUDA_HOME (the venv's, checked first) is
# mounted for the build stage alone; its labels are the stack's pins.
IMAGE_GPU = $(if $(GPU_FLAG),--build-arg HOROVOD_GPU_OPERATIONS=NCCL \
	-v $(realpath $(CUDA_HOME)):/usr/local/cuda:ro \
	--build-arg CUDA_VERSION=$(TF_CUDA) \
	--build-arg CUDNN_VERSION=$(call pin,nvidia-cudnn-cu12) \
	--build-arg NCCL_VERSION=$(NCCL_VERSION) \
	--build-arg HOROVOD_CUDA_TOOLKIT=$(TOOLKIT_CUDA) \
	--build-arg NVIDIA_VISIBLE_DEVICES=all)
# Where pip here trusts a CA bundle of its own (PIP_CERT: a proxy that
# re-signs TLS), the build's RUN steps see it in the image's place; the image
# keeps its own.
IMAGE_CA := $(if $(PIP_CERT),--build-arg PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
	-v $(PIP_CERT):/etc/ssl/certs/ca-certificates.crt:ro)
.PHONY: image
image:
	$(if $(GPU_FLAG),@python3 tools/check_env.py --prerequisites --image \
		--tf-version $(TF_VERSION) $(NO_HOROVOD_FLAG) $(GPU_FLAG))
	@python3 tools/images.py setup
	@python3 tools/images.py bases --python $(IMAGE_PYTHON)
	@python3 tools/images.py wheel --to .image-wheels $(if $(WITH_HOROVOD),--from $(IMAGE_WHEELS))
	podman build --network=host --uts=host $(IMAGE_CA) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		--build-arg PYTHON_VERSION=$(IMAGE_PYTHON) \
		--build-arg HOROVOD_VERSION=$(if $(WITH_HOROVOD),$(HOROVOD_VERSION),none) \
		--build-arg HOROVOD_CONTROLLER=$(if $(WITH_HOROVOD),$(HOROVOD_CONTROLLER),none) \
		$(IMAGE_GPU) -t $(IMAGE_TAG) .
