"""The main job across the test hosts under Open MPI's mpirun (the MPI
build: `make test HOROVOD_CONTROLLER=mpi` runs this)."""
import json
import os
import sys

import horovod.tensorflow as hvd
import pytest

from tests.helpers import hostjobs
from tests.helpers import REPO

needs_mpi = pytest.mark.skipif(
    not hvd.mpi_built(), reason="this Horovod was built without MPI; "
    "`make test HOROVOD_CONTROLLER=mpi` builds the stack that runs this")


@needs_mpi
def test_mpirun_across_two_hosts(test_hosts, tmp_path):
  lh1, lh2 = test_hosts.hosts[:2]
  data_dir = hostjobs.put_data(test_hosts, ["lh1", "lh2"])
  model_dir = os.path.join(test_hosts.scratch, "mpirun")
  # Root needs --allow-run-as-root, 4 ranks on 2 cores --oversubscribe;
  # both of Open MPI's transports on the hosts' interface; the ranks get
  # this PATH and start in the checkout on every host.
  process = lh1.run(
      ["mpirun", "--allow-run-as-root", "--oversubscribe", "--tag-output",
       "-np", "4", "-H", "lh1:2,lh2:2", "--mca", "btl_tcp_if_include", "eth0",
       "--mca", "oob_tcp_if_include", "eth0", "-x", "PATH", "-wdir",
       REPO, sys.executable, "-m", "legacy_hvd.train",
       "--model_dir=" + model_dir, "--data_dir=" + data_dir,
       "--max_steps=10"], timeout=hostjobs.JOB_TIMEOUT)
  output = process.stdout + process.stderr
  assert process.returncode == 0, output[-6000:]
  placed = hostjobs.start_lines(output)
  assert {r: p[0] for r, p in placed.items()} == {
      0: "lh1", 1: "lh1", 2: "lh2", 3: "lh2"}
  assert [placed[r][3] for r in range(4)] == [0, 0, 1, 1]   # cross ranks
  with open(os.path.join(lh1.path(model_dir), "results.json")) as f:
    results = json.load(f)
  assert results["world_size"] == 4 and results["weights_in_sync"]
  assert not os.path.exists(lh2.path(model_dir))
