"""legacy_hvd.launch.run_outcome: how a run under the supervisor ended, judged from
what its ranks printed (the lines of docs/faults.md, behind horovodrun's
tags) and whether rank 0 wrote results.json during it."""
import json
import os

from legacy_hvd.common import cli
from legacy_hvd.launch import run_outcome

LOST_LH2 = (
    "[2]<stderr>:legacy_hvd.train: error: on lh1: lost host lh2 (ranks 2, 3: "
    "host unreachable); the job stops. rank 0's last checkpoint is step 100 "
    "in /scratch/runs/cifar10; relaunch on the remaining hosts (-H lh1:2) "
    "to resume\n")
RANK0_FAILED = (
    "[1]<stderr>:legacy_hvd.train: error: rank 0 on host lh1 failed (see its "
    "error); the job stops. rank 0's last checkpoint is in "
    "/scratch/runs/cifar10 on lh1\n")
PROGRESS = "[0]<stderr>:I1202 06:00:00 step 100: loss 1.93, 812 images/sec\n"


def lines_of(*texts):
  lines = run_outcome.Lines()
  for text in texts:
    lines.add(text)
  return lines


def test_a_lost_host_is_named_and_left_out(tmp_path):
  mark = run_outcome.results_mark(str(tmp_path))
  outcome = lines_of(PROGRESS, LOST_LH2).outcome(1, str(tmp_path), mark)
  assert outcome.kind == run_outcome.LOST
  assert outcome.code == 1
  assert outcome.what == "host lh2 (ranks 2, 3: host unreachable)"
  assert outcome.dropped == {"lh2": "host unreachable"}
  assert outcome.line == LOST_LH2[len("[2]<stderr>:"):].rstrip("\n")


def test_every_survivors_lost_hosts_are_left_out(tmp_path):
  # Two survivors on two hosts each saw another host go; the first line is
  # the one shown.
  first = ("[0]<stderr>:legacy_hvd.train: error: on lh1: lost host lh3 "
           "(rank 2: process ended); the job stops. ...\n")
  second = ("[1]<stderr>:legacy_hvd.train: error: on lh2: lost rank 3 of 4 "
            "on host lh4 (not answering: stopped or stuck); the job stops. "
            "...\n")
  outcome = lines_of(first, second).outcome(1, str(tmp_path), None)
  assert outcome.kind == run_outcome.LOST
  assert outcome.what == "host lh3 (rank 2: process ended)"
  assert outcome.dropped == {
      "lh3": "process ended",
      "lh4": "rank 3 of 4 on host lh4 (not answering: stopped or stuck)"}


def test_a_report_to_a_deciding_launcher_is_read_as_the_error_line(tmp_path):
  # Under the supervisor or the Slurm launcher a survivor reports without
  # "error:": the one error line is the launcher's verdict.
  report = ("[2]<stderr>:legacy_hvd.train: on lh1: lost host lh2 (ranks 2, "
            "3: host unreachable); this run stops. rank 0's last checkpoint "
            "is step 100 in /scratch/runs/cifar10; legacy_hvd.launch."
            "supervise decides what follows\n")
  outcome = lines_of(PROGRESS, report).outcome(1, str(tmp_path), None)
  assert outcome.kind == run_outcome.LOST
  assert outcome.dropped == {"lh2": "host unreachable"}
  failed = ("1: legacy_hvd.train: rank 0 on host lh1 failed (see its "
            "error); this run stops. rank 0's last checkpoint is in /s on "
            "lh1; legacy_hvd.launch.slurm decides what follows\n")
  assert lines_of(failed).outcome(1, str(tmp_path), None).kind == (
      run_outcome.FAILED)


def test_a_rank_that_died_alone_leaves_its_host_in(tmp_path):
  # Its process ended on a host whose other rank answers: the host is up.
  alone = ("[1]<stderr>:legacy_hvd.train: error: lost rank 1 of 2 on host "
           "lh1 (process ended); the job stops. ...\n")
  outcome = lines_of(alone).outcome(1, str(tmp_path), None)
  assert outcome.kind == run_outcome.LOST and outcome.dropped == {}


def test_a_ranks_own_error_is_a_failure_not_a_loss(tmp_path):
  outcome = lines_of(PROGRESS, RANK0_FAILED).outcome(1, str(tmp_path), None)
  assert outcome.kind == run_outcome.FAILED
  assert outcome.line == RANK0_FAILED[len("[1]<stderr>:"):].rstrip("\n")
  assert outcome.what is None and outcome.dropped == {}


def test_results_written_during_the_run_mean_it_trained(tmp_path):
  results = tmp_path / "results.json"
  results.write_text("{}")
  os.utime(results, ns=(0, 0))   # an older run's
  mark = run_outcome.results_mark(str(tmp_path))
  # horovodrun's code may read 0 after a stopped rank: not enough alone.
  assert lines_of(PROGRESS).outcome(0, str(tmp_path),
                                    mark).kind == run_outcome.OTHER
  results.write_text('{"steps": 200}')   # rank 0, at the end of this run
  # Written: trained, whatever else the ranks printed or the code says.
  assert lines_of(LOST_LH2).outcome(1, str(tmp_path),
                                    mark).kind == run_outcome.TRAINED


def test_a_clean_exit_counts_when_the_model_dir_is_on_another_host(tmp_path):
  elsewhere = str(tmp_path / "on-lh2")
  assert lines_of(PROGRESS).outcome(0, elsewhere,
                                    None).kind == run_outcome.TRAINED
  assert lines_of(PROGRESS).outcome(1, elsewhere,
                                    None).kind == run_outcome.OTHER


def test_the_restarts_are_added_to_results_json(tmp_path):
  (tmp_path / "results.json").write_text(json.dumps({"steps": 200}))
  restarts = [{"restart": 1, "resumed_at_step": 100, "hosts": "lh1:2",
               "np": 2, "lost": "host lh2 (ranks 2, 3: host unreachable)",
               "dropped": {"lh2": "host unreachable"}, "seconds": 12.5}]
  path = run_outcome.record_restarts(str(tmp_path), restarts)
  assert path == str(tmp_path / "results.json")
  assert json.loads((tmp_path / "results.json").read_text()) == {
      "steps": 200, "restarts": restarts}
  assert os.listdir(tmp_path) == ["results.json"]   # no temporary file left


def test_no_restarts_recorded_without_a_results_json(tmp_path):
  assert run_outcome.record_restarts(str(tmp_path), []) is None
  assert os.listdir(tmp_path) == []


def survivors_line(monkeypatch, capsys, lost, decider=None):
  """What job_faults.report_lost_peers prints on rank 0 of lh1:2,lh2:2,
  under a launcher that decides (decider) or horovodrun alone."""
  from legacy_hvd.faults import roster
  from legacy_hvd.training import job_faults
  if decider:
    monkeypatch.setenv(cli.DECIDER, decider)
  else:
    monkeypatch.delenv(cli.DECIDER, raising=False)
  monkeypatch.setattr(cli, "_program", lambda: "legacy_hvd.train")
  monkeypatch.setattr(cli, "_spans_hosts", lambda: False)
  ranks = roster.Roster(0, None, None, None)
  ranks.ranks = [roster.Peer(host, "198.18.0.1", 1, 2, "t")
                 for host in ("lh1", "lh1", "lh2", "lh2")]
  job_faults.report_lost_peers(ranks, lost, 0, "/nowhere")
  return capsys.readouterr().err


def test_one_failure_one_verdict(monkeypatch, capsys, tmp_path):
  # Alone, the survivor's line is the error line and says how to resume;
  # under a launcher that decides it reports, and the launcher reads it the
  # same way.
  from legacy_hvd.faults import probes
  lost = {2: probes.GONE, 3: probes.GONE}
  alone = survivors_line(monkeypatch, capsys, lost)
  assert alone.startswith("legacy_hvd.train: error: lost host lh2 (ranks 2, "
                          "3: processes ended); the job stops."), alone
  assert "relaunch on the remaining hosts (-H lh1:2) to resume" in alone
  decided = survivors_line(monkeypatch, capsys, lost,
                           "legacy_hvd.launch.slurm")
  assert decided.startswith("legacy_hvd.train: lost host lh2 (ranks 2, 3: "
                            "processes ended); this run stops."), decided
  assert decided.rstrip().endswith(
      "legacy_hvd.launch.slurm decides what follows")
  assert ": error:" not in decided and "relaunch" not in decided
  for line in (alone, decided):
    outcome = lines_of(line).outcome(1, str(tmp_path), None)
    assert (outcome.kind, outcome.dropped) == (
        run_outcome.LOST, {"lh2": "processes ended"})
  failed = survivors_line(monkeypatch, capsys, {0: probes.FAILED},
                          "legacy_hvd.launch.supervise")
  assert ": error:" not in failed
  assert lines_of(failed).outcome(1, str(tmp_path), None).kind == (
      run_outcome.FAILED)
