"""Every rank in the image across the test hosts, in the hybrid model HPC
sites use (docs/containers.md, "Across hosts"): horovodrun runs in the
image on lh1 under Charliecloud, and each remote rank is started in the
image on its own host by the ssh key's forced command. No sshd in the
image, nothing of the stack installed on the hosts.

Runs in the TF 1.15 suite and the GPU stack's (the `image` mark: the
stack's image), beside the host tests.
"""
import json
import os
import re

import pytest

from legacy_hvd.common import compat
from tests.helpers import error_lines, hostjobs, images, slurmjobs, wait_for

pytestmark = pytest.mark.image

JOB = ["--batch_size=64", "--deterministic", "--log_every_n_steps=10",
       "--save_checkpoints_steps=20"]
STEPS = 60
JOB_TIMEOUT = 240
REQUEUE_TIMEOUT = 60   # as test_slurm's
LOST_BOUND = 60   # as test_hosts_faults' killed host: the line and the exit
# The key's forced command, as docs/containers.md writes it for a user's
# ~/.ssh/authorized_keys: whatever horovodrun asks of the host runs in the
# image there.
FORCED = ('command="ch-run --set-env --set-env=HOME=/tmp {image} -- '
          '/bin/sh -c \\"$SSH_ORIGINAL_COMMAND\\"",no-pty {key}')


@pytest.fixture(scope="module")
def hybrid(test_hosts, tmp_path_factory):
  """(the image directory, the ssh settings bound over the image's
  /etc/ssh): a key of its own whose login on every host is the image."""
  image = images.flat_image(images.ensure_image())
  ssh = tmp_path_factory.mktemp("image-ssh")
  key = ssh / "id_ed25519"
  assert os.system("ssh-keygen -q -t ed25519 -N '' -C in-image -f {}".format(
      key)) == 0
  (ssh / "ssh_config").write_text(
      "Host *\n  IdentityFile {}\n  UserKnownHostsFile /dev/null\n"
      "  StrictHostKeyChecking no\n  LogLevel ERROR\n".format(key))
  authorized = os.path.join(test_hosts.ssh_dir, "authorized_keys")
  with open(authorized) as f:
    before = f.read()
  with open(authorized, "a") as f:
    f.write(FORCED.format(image=image, key=(ssh / "id_ed25519.pub")
                          .read_text().strip()) + "\n")
  try:
    yield image, str(ssh)
  finally:
    with open(authorized, "w") as f:
      f.write(before)


@pytest.fixture(scope="module")
def data_dir(test_hosts):
  return hostjobs.put_data(test_hosts, ["lh1", "lh2"])


def start_in_image(test_hosts, hybrid, np, hosts, model_dir, args, log):
  """horovodrun in the image on lh1 (Charliecloud, as root here)."""
  image, ssh = hybrid
  # One host: its ranks are local to horovodrun, which then has no
  # interface to pick (as hostjobs.run with interface=None).
  interface = ["--network-interface", "eth0"] if "," in hosts else []
  return test_hosts.hosts[0].popen(
      ["env", "USER=root", "ch-run", "--set-env", "--set-env=HOME=/tmp",
       "-b", ssh + ":/etc/ssh", image, "--",
       "horovodrun", "-np", str(np), "-H", hosts, *interface, "python", "-m",
       "legacy_hvd.train", *JOB, *args,
       "--model_dir=" + model_dir],
      cwd="/tmp", stdout=log, stderr=log)


def run_in_image(test_hosts, hybrid, np, hosts, model_dir, args, log_path):
  return hostjobs.to_the_end(
      lambda log: start_in_image(test_hosts, hybrid, np, hosts, model_dir,
                                 args, log), log_path)


def results(test_hosts, model_dir):
  with open(os.path.join(test_hosts.hosts[0].path(model_dir),
                         "results.json")) as f:
    return json.load(f)


@pytest.fixture(scope="module")
def two_by_two(test_hosts, hybrid, data_dir, tmp_path_factory):
  """2 hosts x 2 ranks, every one in the image: (exit code, output,
  results)."""
  model_dir = os.path.join(test_hosts.scratch, "image-2x2")
  code, output = run_in_image(
      test_hosts, hybrid, 4, "lh1:2,lh2:2", model_dir,
      ["--data_dir=" + data_dir, "--max_steps={}".format(STEPS)],
      tmp_path_factory.mktemp("image-2x2") / "job.log")
  assert code == 0, output[-6000:]
  return code, output, results(test_hosts, model_dir)


def test_every_rank_in_the_image_two_hosts_equal_one_host(
    test_hosts, hybrid, data_dir, two_by_two, tmp_path):
  scratch = test_hosts.scratch
  args = ["--data_dir=" + data_dir, "--max_steps={}".format(STEPS)]
  _, output, two = two_by_two
  lines = hostjobs.start_lines(output)
  assert sorted(host for host, *_ in lines.values()) == [
      "lh1", "lh1", "lh2", "lh2"], output[-6000:]
  # lh2's ranks ran the image's stack: the hosts have none.
  assert two["tensorflow_version"] == compat.tf.version.VERSION
  code, output = run_in_image(test_hosts, hybrid, 4, "lh1:4",
                              os.path.join(scratch, "image-1x4"), args,
                              tmp_path / "one.log")
  assert code == 0, output[-6000:]
  one = results(test_hosts, os.path.join(scratch, "image-1x4"))
  assert two["weight_digests"] == one["weight_digests"]


def test_a_killed_host_in_the_image_is_named_in_one_line(
    test_hosts, hybrid, data_dir, tmp_path):
  lh1, lh2 = test_hosts.hosts[:2]
  model_dir = os.path.join(test_hosts.scratch, "image-killed")
  log_path = tmp_path / "killed.log"
  with open(log_path, "w") as log:
    job = start_in_image(test_hosts, hybrid, 4, "lh1:2,lh2:2", model_dir,
                         ["--data_dir=" + data_dir, "--max_steps=100000"],
                         log)
    try:
      wait_for(lambda: os.path.exists(os.path.join(
          lh1.path(model_dir), "model.ckpt-20.index")), 240,
               "a checkpoint at step 20")
      assert lh2.kill("legacy_hvd.train")
      job.wait(timeout=LOST_BOUND)
    finally:
      if job.poll() is None:
        job.kill()
        job.wait()
  output = log_path.read_text()
  errors = error_lines(output)
  assert len(errors) == 1, output[-6000:]
  assert ("error: on lh1: lost host lh2 (ranks 2, 3: processes ended)"
          in errors[0]), errors[0]
  assert "]<stderr>:Traceback" not in output


def test_slurm_tasks_in_the_image_requeue_and_resume_as_without_it(
    slurm, two_by_two, data_dir):
  # slurm/train.sbatch --image: each srun task is `ch-run IMAGE -- python
  # -m legacy_hvd.launch.slurm_task ...`; the launcher itself on the host.
  image = images.flat_image(images.ensure_image())
  scratch = slurm.cluster.scratch
  job = slurmjobs.submit(slurm, "image", [
      "--image=" + image, "--bind={}:/runs".format(scratch),
      # The tasks' /tmp is private (ch-run -t): the data bound too.
      "--bind={}:/data".format(os.path.dirname(data_dir)),
      "--data_dir=/data/" + os.path.basename(data_dir),
      "--deterministic", "--max_steps={}".format(STEPS),
      "--log_every_n_steps=10", "--save_checkpoints_steps=100000",
      "--model_dir=/runs/" + slurmjobs.PREFIX + "image"], data_dir)
  slurmjobs.wait_for_line(job, "step 10:", JOB_TIMEOUT)
  slurm.run(["scancel", "--batch", "--signal=USR1", job.id], check=True)
  slurmjobs.wait_for_line(job, "requeueing", 60)
  slurmjobs.wait_for_line(job, ", restart 1:", REQUEUE_TIMEOUT)
  slurmjobs.wait_gone(job, JOB_TIMEOUT)
  output = job.output()
  state = job.state()
  assert (state["JobState"], state["Restarts"]) == ("COMPLETED", "1"), \
      output[-6000:]
  step = int(re.search(r"ranks stopped at step (\d+) \(SIGUSR1\); "
                       r"requeueing", output).group(1))
  assert "Resuming from global step {}".format(step) in output
  with open(os.path.join(job.model_dir, "results.json")) as f:
    resumed = json.load(f)
  assert resumed["tensorflow_version"] == compat.tf.version.VERSION
  assert resumed["start_step"] == step
  # Requeued in the image = uninterrupted in the image, bit for bit.
  assert resumed["weight_digests"] == two_by_two[2]["weight_digests"]


def test_slurm_with_a_bad_image_or_mount_fails_in_one_line(slurm, data_dir):
  scratch = slurm.cluster.scratch
  for name, args, expected in [
      ("no-image", ["--image=/var/tmp/no-such-image"],
       "--image=/var/tmp/no-such-image: no legacy-hvd image there"),
      ("no-mount", ["--image=" + images.flat_image(images.ensure_image()),
                    "--bind=/no/such/dir:/data"],
       "--bind=/no/such/dir:/data: /no/such/dir is not a directory on this "
       "node; no rank was started")]:
    job = slurmjobs.submit(slurm, name, args + ["--max_steps=10"], data_dir)
    slurmjobs.wait_gone(job, 60)
    assert job.state()["JobState"] == "FAILED"
    errors = error_lines(job.output())
    assert len(errors) == 1, job.output()
    assert expected in errors[0], errors[0]
    assert not os.path.exists(os.path.join(scratch, slurmjobs.PREFIX + name))
