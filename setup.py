"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode."""
from setuptools import find_packages
from setuptools import setup

setup(
    name="legacy-hvd",
    version="0.1.0",
    description="Reference Horovod data-parallel training in TensorFlow 1 graph "
                "mode, with TF2 twins",
    # The entry points in legacy_hvd/, its rooms (one subpackage per
    # concern, docs/layout.md) and the flag definitions.
    packages=find_packages(include=["legacy_hvd", "legacy_hvd.*", "flags"]),
    # 3.7: the TF 1.15.5 stack; 3.9-3.12: the TF 2 stacks (constraints/).
    python_requires=">=3.7",
    # TensorFlow and Horovod are pinned per stack in constraints/ and built by
    # the Makefile: Horovod must be compiled against the exact TensorFlow that
    # is installed. These floors are the oldest versions the TF 1.15 stack
    # runs with.
    install_requires=["absl-py>=0.9", "numpy>=1.16"],
    # One console script per entry point: legacy-hvd-train runs what
    # `python -m legacy_hvd.train` runs, and so on.
    entry_points={
        "console_scripts": [
            "legacy-hvd-train=legacy_hvd.train:run",
            "legacy-hvd-train-tf2=legacy_hvd.train_tf2:run",
            "legacy-hvd-train-keras=legacy_hvd.train_keras:run",
            "legacy-hvd-train-estimator=legacy_hvd.train_estimator:run",
            "legacy-hvd-train-mwms=legacy_hvd.train_mwms:run",
            "legacy-hvd-train-mwms-keras=legacy_hvd.train_mwms_keras:run",
            "legacy-hvd-evaluate=legacy_hvd.evaluate:run",
            "legacy-hvd-export=legacy_hvd.export:run",
            "legacy-hvd-predict=legacy_hvd.predict:run",
            "legacy-hvd-preflight=legacy_hvd.launch.preflight:run",
            "legacy-hvd-gpu-check=legacy_hvd.launch.gpu_check:run",
            "legacy-hvd-slurm=legacy_hvd.launch.slurm:run",
            "legacy-hvd-supervise=legacy_hvd.launch.supervise:run",
            "legacy-hvd-launch-workers=legacy_hvd.launch.workers:run",
            "legacy-hvd-data=legacy_hvd.data.__main__:run",
        ],
    },
)
