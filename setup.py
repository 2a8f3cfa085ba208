"""legacy-hvd: reference Horovod data-parallel training in TF1 graph mode."""
from setuptools import setup

setup(
    name="legacy-hvd",
    version="0.1.0",
    description="Reference Horovod data-parallel training in TensorFlow 1 graph "
                "mode, with a TF2 twin",
    packages=["legacy_hvd", "flags"],
    python_requires=">=3.7",  # 3.7: the TF 1.15 stack
    # The TensorFlow/Horovod pair is pinned and built by the Makefile: Horovod
    # must be compiled against the exact TensorFlow that is installed.
    install_requires=["absl-py", "numpy"],
    entry_points={
        "console_scripts": ["legacy-hvd-train=legacy_hvd.train:run"],
    },
)
