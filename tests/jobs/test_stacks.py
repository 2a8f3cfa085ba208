"""The stack under test: its Horovod hook and, when built in, the MPI launchers.

`make test` runs these on the default stack (TF 2.15.1, Gloo);
`make test TF_VERSION=2.18.1` and `make test HOROVOD_CONTROLLER=mpi` run the
whole suite, these included, on the other stacks; CI runs this module and
tests/hosts/test_hosts_mpi.py alone on the MPI build (.ci/run).
"""

import horovod.tensorflow as hvd
import pytest

from legacy_hvd.training import hooks
from tests.helpers import assert_ok, horovodrun, read_results

needs_mpi = pytest.mark.skipif(
    not hvd.mpi_built(), reason="this Horovod was built without MPI; "
    "`make test HOROVOD_CONTROLLER=mpi` builds the stack that runs this")


def test_broadcast_hook_is_horovods_where_it_exists():
  own = getattr(hvd, "BroadcastGlobalVariablesHook", None)
  if own is not None:
    assert hooks.BroadcastGlobalVariablesHook is own
  else:   # TF >= 2.16: Horovod looks for tf.estimator and finds none
    assert hooks.BroadcastGlobalVariablesHook is (
        hooks._BroadcastGlobalVariablesHook)


@needs_mpi
@pytest.mark.parametrize("launcher", [
    ["horovodrun", "--mpi", "-np", "2", "-H", "localhost:2"],
    # Open MPI refuses root without the flag, and two ranks on fewer cores
    # without --oversubscribe.
    ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"],
], ids=["horovodrun-mpi", "mpirun"])
def test_main_job_under_mpi(tmp_path, isolated_cache, launcher):
  process = horovodrun(2, "legacy_hvd.train", [
      f"--model_dir={tmp_path / 'model'}", "--max_steps=30"],
                       launcher=launcher)
  assert_ok(process)
  results = read_results(tmp_path / "model")
  assert results["world_size"] == 2 and results["steps"] == 30
  assert results["weights_in_sync"]
