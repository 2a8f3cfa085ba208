"""tools/signal_moments.py's own logic, without a run: its arguments, the
lines it reads and its verdicts."""
import pytest

from tools import signal_moments as sm

REFERENCE = {"digests": [[1.0], [1.0]]}


def record(**fields):
  values = {"code": 143, "traceback": False, "left": [], "stopped_at": None,
            "resumed_from": 0, "digests": None, "finished": False,
            "before_the_last_step": True}
  values.update(fields)
  return values


@pytest.mark.parametrize("argv, wrong", [
    (["--launchers=mpirun"], "--launchers: mpirun"),
    (["--signals=TERM,NOPE"], "--signals: NOPE"),
    (["--moments=step:ten"], "--moments: step:ten"),
])
def test_bad_arguments_are_one_line(argv, wrong, capsys):
  with pytest.raises(SystemExit):
    sm.parse_args(["--out=x", *argv])
  assert wrong in capsys.readouterr().err


def test_the_lines_it_reads():
  assert sm.stopped_step("[0]<stderr>:I... Stopped by signal 15 at step 7; "
                         "the checkpoint ...") == 7
  assert sm.stopped_step("Stopped by another rank's signal at step 3") == 3
  assert sm.stopped_step("step 3: loss 2.1") is None
  assert sm.resumed_step("Resuming from global step 10") == 10
  assert sm.resumed_step("starting") == 0
  horovodrun_s = ('Traceback (most recent call last):\n  File "/v/bin/horovodrun"'
                  ', line 8, in <module>\n    sys.exit(run_commandline())\n'
                  'RuntimeError: Horovod detected that one or more processes '
                  'exited with non-zero status\n')
  assert not sm.ours_traceback(horovodrun_s)
  assert sm.ours_traceback(horovodrun_s.replace("/v/bin/horovodrun",
                                                "/r/legacy_hvd/launch/x.py"))
  assert sm.ours_traceback("[1]<stderr>:Traceback (most recent call last):\n")
  assert sm.moment_line("start+0.5", 20) is None
  assert sm.moment_line("final", 20) == r"\bstep 20: "


def test_a_stop_resumed_where_it_stopped_with_equal_weights_is_kept():
  first = record(stopped_at=7)
  second = record(code=0, resumed_from=7, digests=REFERENCE["digests"])
  assert sm.judged(first, second, REFERENCE) == []


def test_what_fails_a_row():
  first = record(stopped_at=7, traceback=True, left=[4242])
  second = record(code="hang", resumed_from=0, digests=[[2.0], [2.0]])
  assert sm.judged(first, second, REFERENCE) == [
      "run: a traceback", "run: processes left [4242]", "rerun hung",
      "weights differ from the reference", "stopped at 7, resumed from 0"]


def test_a_signal_before_the_last_step_of_a_job_that_finished_was_lost():
  finished = record(code=-1, finished=True, digests=REFERENCE["digests"])
  assert sm.judged(finished, None, REFERENCE) == [
      "lost: the job ran to its end without its launcher"]
  late = dict(finished, code=0, before_the_last_step=False)
  assert sm.judged(late, None, REFERENCE) == []


def test_slurm_warning_judges_a_job_by_its_state_and_lines():
  from tools import slurm_warning
  launcher = "legacy_hvd.launch.slurm: job 7: "
  before = (launcher + "SIGUSR1 before the ranks started; requeueing, to "
            "resume in /s/warn\n, restart 1: ...\nstep 20: loss 2.2\n")
  row = slurm_warning.judge("w", "USR1", 0, 0.02, {
      "JobState": "COMPLETED", "Restarts": "1"}, before)
  assert row["kept"] and row["stopped_at"] is None
  assert row["resumed_at"] == 0
  assert row["launcher"].startswith("SIGUSR1 before the ranks started")
  stopped = ("[0]: Stopped by signal 10 at step 1; the checkpoint ...\n"
             + launcher + "ranks stopped at step 1 (SIGUSR1); requeueing\n"
             ", restart 1: ...\nResuming from global step 1\n")
  assert slurm_warning.judge("w", "USR1", 0.5, 0.51, {
      "JobState": "COMPLETED", "Restarts": "1"}, stopped)["kept"]
  for state, output in [({"JobState": "COMPLETED", "Restarts": "0"},
                         "step 20: loss 2.2\n"),                  # lost
                        ({"JobState": "FAILED", "Restarts": "0"}, ""),
                        ({"JobState": "COMPLETED", "Restarts": "1"},
                         stopped.replace("global step 1", "global step 0"))]:
    assert not slurm_warning.judge("w", "USR1", 0, 0.02, state,
                                   output)["kept"]
  # A person's stop: not requeued, the ranks stopped where they agreed.
  asked = ("[0]: Stopped by signal 15 at step 4; the checkpoint ...\n"
           + launcher + "ranks stopped at step 4 (SIGINT: a stop); not "
           "requeued\n")
  failed = {"JobState": "FAILED", "Restarts": "0"}
  row = slurm_warning.judge("w", "INT", 3, 3.01, failed, asked)
  assert row["kept"] and row["stopped_at"] == 4
  assert not slurm_warning.judge("w", "INT", 3, 3.01, failed, "")["kept"]
