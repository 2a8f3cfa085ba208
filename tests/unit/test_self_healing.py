"""The launchers' pieces for a job that heals itself, in-process: the
trainers' flags judged before any rank starts, the srun-tagged lines read,
the Slurm restart ledger, and the leftovers a relaunch waits for (real
processes, found by their mark). The jobs themselves:
tests/hosts/test_slurm.py and tests/hosts/test_supervise.py."""
import importlib
import json
import os
import subprocess

import pytest

import flags
from legacy_hvd.launch import slurm
from legacy_hvd.launch import supervise
from legacy_hvd.common import cli
from legacy_hvd.launch import leftovers
from legacy_hvd.launch import run_outcome
from legacy_hvd.launch import slurm_healing

# Under a launcher that decides, the survivor reports; the verdict is the
# launcher's (job_faults.report_lost_peers).
LOST_LH2_UNDER_SRUN = (
    "1: legacy_hvd.train: on lh1: lost host lh2 (ranks 2, 3: process "
    "ended); this run stops. rank 0's last checkpoint is in /scratch/m on "
    "lh1; legacy_hvd.launch.slurm decides what follows\n")


@pytest.mark.parametrize("module", sorted(flags.TRAINERS))
def test_each_trainer_defines_the_flags_the_launchers_judge(module,
                                                            monkeypatch):
  trainer = importlib.import_module(module)
  defined = []
  monkeypatch.setattr(trainer.cli, "run",
                      lambda main, define_flags: defined.extend(define_flags))
  trainer.run()
  assert tuple(defined) == flags.TRAINERS[module]


def test_the_slurm_launcher_takes_every_trainer():
  assert set(slurm.TRAINERS) == set(flags.TRAINERS)
  args, rest = slurm.parse(["--module=legacy_hvd.train_estimator",
                            "--max_restarts=2", "--min_nodes=1", "--lr=0.1"])
  assert (args.module, args.max_restarts, args.min_nodes, rest) == (
      "legacy_hvd.train_estimator", 2, 1, ["--lr=0.1"])


@pytest.mark.parametrize("module,args,line", [
    ("legacy_hvd.train", ["--batch_size=0"], "legacy_hvd.train: flag "
     "--batch_size=0: --batch_size must be a positive integer"),
    ("legacy_hvd.train_estimator", ["--nohorovod"], "--nohorovod is a mode "
     "of legacy_hvd.train only"),
    ("legacy_hvd.train_tf2", ["--epochs=2", "--max_steps=5"],
     "--epochs and --max_steps both set"),
    ("legacy_hvd.train_keras", ["--no_such_flag=1"],
     "Unknown command line flag 'no_such_flag'"),
])
def test_a_bad_trainer_flag_stops_the_slurm_launcher_in_one_line(
    module, args, line, capsys):
  with pytest.raises(SystemExit) as ended:
    slurm.check_trainer_flags(module, args)
  assert ended.value.code == cli.USAGE_ERROR
  said = capsys.readouterr().err.splitlines()
  assert len(said) == 1 and said[0].endswith("; no rank was started")
  assert line in said[0]
  slurm.check_trainer_flags(module, [])   # the defaults pass


def test_min_nodes_needs_a_total_task_count_not_tasks_per_node():
  per_node = {"SLURM_NTASKS_PER_NODE": "2", "SLURM_NTASKS": "4"}
  why = slurm_healing.cannot_shrink(1, per_node)
  assert why.startswith("--min_nodes=1 needs the job submitted with a total "
                        "task count (sbatch -N 2 -n 4), not "
                        "--ntasks-per-node=2")
  assert slurm_healing.cannot_shrink(None, per_node) is None
  assert slurm_healing.cannot_shrink(1, {"SLURM_NTASKS": "4"}) is None


@pytest.mark.parametrize("command", [
    ["python", "-m", "legacy_hvd.train", "--batch_size=0"],
    ["/venv/bin/legacy-hvd-train-estimator", "--batch_size=0"],
])
def test_a_bad_trainer_flag_stops_the_supervisor_in_one_line(command, capsys):
  assert supervise.trainer_of(command)[1] == ["--batch_size=0"]
  with pytest.raises(SystemExit) as ended:
    supervise.check_input(command, None)
  assert ended.value.code == cli.USAGE_ERROR
  said = capsys.readouterr().err.splitlines()
  assert len(said) == 1 and said[0].endswith(
      "--batch_size must be a positive integer; nothing was started")


def test_another_command_is_left_to_itself():
  assert supervise.trainer_of(["sh", "-c", "true"]) == (None, None)
  assert supervise.trainer_of(["python", "-m", "mine", "--x"]) == (None, None)


def test_an_srun_tagged_lost_line_is_read_and_its_node_left_out(tmp_path):
  lines = run_outcome.Lines()
  lines.add("0: I1202 step 60: loss 1.2\n")
  lines.add(LOST_LH2_UNDER_SRUN)
  outcome = lines.outcome(75, str(tmp_path), None)
  assert outcome.kind == run_outcome.LOST
  assert outcome.dropped == {"lh2": "process ended"}
  assert outcome.line.startswith("legacy_hvd.train: on lh1: lost")


def test_the_ledger_counts_one_jobs_restarts_across_requeues(tmp_path):
  model_dir = str(tmp_path / "model")
  first = slurm_healing.Ledger(model_dir, 7)
  assert (first.restarts, first.excluded, first.nodes) == ([], [], None)
  first.add({"restart": 1}, ["lh2"], 2)
  again = slurm_healing.Ledger(model_dir, 7)   # the requeued run's launcher
  again.add({"restart": 2}, ["lh3"], 1)
  kept = slurm_healing.Ledger(model_dir, "7")
  assert kept.restarts == [{"restart": 1}, {"restart": 2}]
  assert (kept.excluded, kept.nodes) == (["lh2", "lh3"], 2)
  # Another job's file in the same directory counts nothing for this one.
  assert slurm_healing.Ledger(model_dir, 8).restarts == []
  with open(os.path.join(model_dir, slurm_healing.LEDGER_FILE)) as f:
    assert json.load(f)["job"] == "7"


def test_a_relaunch_waits_for_the_marked_processes_of_earlier_rounds():
  on_this_host = lambda host, command: ["sh", "-c", command]
  env = dict(os.environ, **leftovers.mark("run-9", 0))
  old = subprocess.Popen(["sleep", "60"], env=env)
  other = subprocess.Popen(["sleep", "60"], env=dict(
      os.environ, **leftovers.mark("run-99", 0)))
  try:
    left = leftovers.wait_gone("run-9", ["here"], on_this_host, 1)
    assert list(left) == ["here"]
    assert left["here"] == ["{} sleep 60 ".format(old.pid)]
    assert "here: {} sleep 60".format(old.pid) in leftovers.describe(left)
    old.kill()
    old.wait()
    assert leftovers.wait_gone("run-9", ["here"], on_this_host, 5) == {}
  finally:
    for process in (old, other):
      process.kill()
      process.wait()


def test_a_loss_with_the_restart_budget_used_up_is_one_line_and_exit_75(
    tmp_path, capsys):
  model_dir = str(tmp_path / "model")
  ledger = slurm_healing.Ledger(model_dir, 5)
  ledger.add({"restart": 1}, ["lh2"], 2)   # the one restart, spent
  outcome = run_outcome.Outcome(run_outcome.LOST, 75, what="host lh3 (rank "
                                "1: process ended)", dropped={"lh3": "x"})
  args, _ = slurm.parse(["--max_restarts=1"])
  with pytest.raises(SystemExit) as ended:
    slurm.requeue_after_loss(outcome, ledger, args, "5",
                             [("lh1", 1), ("lh3", 1)], model_dir)
  assert ended.value.code == cli.LOST_PEER   # the batch script: FAILED
  said = capsys.readouterr().err.splitlines()
  assert [line.split(": error: ", 1)[1] for line in said] == [
      "job 5: lost host lh3 (rank 1: process ended); restart budget used up "
      "(1 of --max_restarts=1); the job stops at step 0 in {}: resubmit it "
      "with --exclude=lh2,lh3 to resume".format(model_dir)]
  assert len(slurm_healing.Ledger(model_dir, 5).restarts) == 1
