"""horovodrun as the suite starts it: Horovod's own launcher, the code the
`horovodrun` console script runs (horovod.runner.launch.run_commandline),
with one question answered in advance.

    python tests/helpers/launcher.py --gloo -np 2 -H localhost:2 python -m ...

Before every launch, horovodrun asks whether Horovod was built with Gloo,
in a forked child that imports TensorFlow (horovod.common.util.gloo_built):
about 4 s of CPU per job, as much as a rank's own start, for an answer that
cannot change between the suite's hundreds of launches. `make install`
asked it once (tools/check_env.py --stack refuses a Horovod without Gloo),
so here it is that answer. Everything else is horovodrun's: its arguments,
the rendezvous, ssh to the test hosts, starting the ranks, passing their
output through and ending them.

The tools (compare_paths, benchmark) start it too (tests/conftest.py names
it in LEGACY_HVD_HOROVODRUN, which tools/stacks.py reads). The unchanged
console script still runs in the suite: the shared TF1 run
(conftest.tf1_run) and the supervisor start the `horovodrun` beside their
Python.
"""
import sys

from horovod.runner import launch


def main():
  launch.gloo_built = lambda verbose=False: True   # checked at install
  return launch.run_commandline()


if __name__ == "__main__":
  sys.exit(main())
