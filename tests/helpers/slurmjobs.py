"""Submitting the job to the test hosts' Slurm, as a user would on lh1.

    job = submit(slurm, "name", ["--max_steps=30"], data_dir)   # sbatch
    wait_gone(slurm, job.id)         # out of squeue (ended, not requeued)
    job.output()                     # its slurm-<id>.out, every restart
    job.model_dir                    # rank 0's, as the test sees it

Every job is `sbatch -N 2 --ntasks-per-node=2 slurm/train.sbatch ...` run
inside lh1 with this test's Python first on PATH (sbatch passes the
environment on), from the checkout; on lh1 and lh2 unless it is free to go
elsewhere (nodelist=None: Slurm still takes the first free nodes, so rank 0
stays on lh1, whose scratch disk holds the model directory).
"""
import os
import time

from tests.helpers import wait_for

SCRIPT = "slurm/train.sbatch"
# Under the hosts' scratch, which other test modules share: a job's model
# directory and output are slurm-<name>, a name no other test uses.
PREFIX = "slurm-"


class Job:

  def __init__(self, slurm, job_id, name):
    self.slurm = slurm
    self.id = job_id
    lh1 = slurm.controller
    self.model_dir = lh1.path(os.path.join(slurm.cluster.scratch,
                                           PREFIX + name))
    self.output_path = lh1.path(os.path.join(slurm.cluster.scratch,
                                             PREFIX + name + ".out"))

  def output(self):
    try:
      with open(self.output_path) as f:
        return f.read()
    except OSError:
      return ""

  def state(self):
    return self.slurm.job(self.id)


def submit(slurm, name, args, data_dir, module=None, tasks_per_node=2,
           nodelist="lh1,lh2"):
  """sbatch of 2 hosts x `tasks_per_node` tasks running `module`
  (legacy_hvd.train) into <scratch>/slurm-<name> with `args`; returns a
  Job."""
  scratch = slurm.cluster.scratch
  argv = ["sbatch", "--parsable", "-N", "2",
          "--ntasks-per-node={}".format(tasks_per_node),
          "--job-name=" + name, "-o",
          os.path.join(scratch, PREFIX + name + ".out")]
  if nodelist:
    argv.append("--nodelist=" + nodelist)
  argv.append(SCRIPT)
  if module:
    argv.append("--module=" + module)
  argv += ["--data_dir=" + data_dir,
           "--model_dir=" + os.path.join(scratch, PREFIX + name), *args]
  process = slurm.run(argv, check=True)
  return Job(slurm, process.stdout.strip().split(";")[0], name)


def wait_for_line(job, text, timeout):
  try:
    wait_for(lambda: text in job.output(), timeout,
             "{!r} in job {}'s output".format(text, job.id))
  except AssertionError as e:
    raise AssertionError("{}; its state {}, its output:\n{}".format(
        e, job.state(), job.output()[-4000:])) from None


def wait_gone(job, timeout):
  """Waits until the job has left squeue; returns when (time.monotonic())."""
  wait_for(lambda: not job.slurm.queued(job.id), timeout,
           "job {} to leave squeue".format(job.id))
  return time.monotonic()
