"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode."""
from setuptools import setup

# One console script per entry point: legacy-hvd-train runs
# `python -m legacy_hvd.train`, and so on (README, "Entry points").
ENTRY_POINTS = ("train", "train_tf2", "train_keras", "evaluate", "export",
                "predict", "preflight")

setup(
    name="legacy-hvd",
    version="0.1.0",
    description="Reference Horovod data-parallel training in TensorFlow 1 graph "
                "mode, with TF2 twins",
    packages=["legacy_hvd", "legacy_hvd.data", "flags"],
    # 3.7: the TF 1.15.5 stack; 3.9-3.12: the TF 2 stacks (constraints/).
    python_requires=">=3.7",
    # TensorFlow and Horovod are pinned per stack in constraints/ and built by
    # the Makefile: Horovod must be compiled against the exact TensorFlow that
    # is installed. These floors are the oldest versions the TF 1.15 stack
    # runs with.
    install_requires=["absl-py>=0.9", "numpy>=1.16"],
    entry_points={
        "console_scripts": [
            "legacy-hvd-{}=legacy_hvd.{}:run".format(name.replace("_", "-"),
                                                     name)
            for name in ENTRY_POINTS
        ] + ["legacy-hvd-data=legacy_hvd.data.__main__:run"],
    },
)
