"""The first-node check's reading of a job's records, on lines written as
TensorFlow, NCCL and horovodrun write them, and a timeline as Horovod
writes it: in-process, no job, no GPU."""
import json

from legacy_hvd.launch import gpu_check
from legacy_hvd.launch import job_evidence

# As TensorFlow 2.15 logs a GPU device (gpu_device.cc) on rank `rank`'s
# stderr, and NCCL 2.16.5 an initialized communicator (init.cc) on stdout,
# each behind horovodrun's mark.
TF_LINE = ("[{rank}]<stderr>:2026-12-07 15:10:02.123456: I tensorflow/core/"
           "common_runtime/gpu/gpu_device.cc:1886] Created device /job:"
           "localhost/replica:0/task:0/device:GPU:0 with 38249 MB memory:  -> "
           "device: {gpu}, name: NVIDIA A100-SXM4-40GB, pci bus id: "
           "0000:{bus:02x}:00.0, compute capability: 8.0")
NCCL_LINE = ("[{rank}]<stdout>:gpu01:41{rank}7:41{rank}9 [{gpu}] NCCL INFO comm "
             "0x55f1c2a3b4c0 rank {rank} nranks 2 cudaDev {gpu} busId "
             "{bus:x}000 commId 0x8e3f1a2b3c4d5e6f - Init COMPLETE")
START_LINE = ("[{rank}]<stderr>:I1207 15:06:59.519081 140585344347008 "
              "devices.py:51] Rank {rank} (local {rank} of 2): pinned to cores "
              "{rank}; 1 intra-op, 1 inter-op threads; host vm, cross rank 0 "
              "of 1; visible_device_list '{told}'")


def job_output(gpus, nccl=True):
  """A 2-rank job's merged output; gpus[k]: the GPU rank k used."""
  lines = ["[0]<stderr>:I1207 step 20: loss 2.1, 2710 images/sec"]
  for rank, gpu in enumerate(gpus):
    lines.append(TF_LINE.format(rank=rank, gpu=gpu, bus=7 + gpu))
    if nccl:
      lines.append(NCCL_LINE.format(rank=rank, gpu=gpu, bus=7 + gpu))
  return "\n".join(lines) + "\n"


def timeline(tmp_path, activity):
  """A timeline as Horovod 0.28.1 writes it (timeline.cc): metadata, then
  each tensor's negotiation and its collective's activities."""
  events = [{"name": "process_name", "ph": "M", "pid": 1,
             "args": {"name": "DistributedAdamOptimizer_Allreduce/"
                              "HorovodAllreduce_grads_0"}}]
  for ts in (100, 200):
    events += [{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": ts, "pid": 1},
               {"ph": "X", "name": "0", "ts": ts, "pid": 1, "dur": 0},
               {"ph": "E", "ts": ts + 1, "pid": 1},
               {"ph": "B", "name": "ALLREDUCE", "ts": ts + 2, "pid": 1},
               {"ph": "B", "name": activity, "ts": ts + 3, "pid": 1},
               {"ph": "E", "ts": ts + 9, "pid": 1},
               {"ph": "E", "ts": ts + 10, "pid": 1}]
  path = tmp_path / "timeline.json"
  path.write_text("[\n" + ",".join(json.dumps(e) for e in events) + "]")
  return job_evidence.timeline_activities(str(path))


def test_rank_lines_take_horovodruns_mark_off_with_or_without_a_time():
  lines = job_evidence.rank_lines(
      "[0]<stdout>:a\nMon Dec  7 15:10:02 2026[1]<stderr>:b\nnot a rank's\n")
  assert lines == {0: ["a"], 1: ["b"]}


def test_rank_k_on_gpu_k_passes_naming_each_gpu():
  lines = job_evidence.rank_lines(job_output([0, 1]))
  verdict = job_evidence.placement(lines, 2, "gpu")
  assert verdict.ok, verdict
  assert verdict.detail == ("rank 0 on GPU 0 (NVIDIA A100-SXM4-40GB, "
                            "0000:07:00.0), rank 1 on GPU 1 (NVIDIA "
                            "A100-SXM4-40GB, 0000:08:00.0)")


def test_rank_1_on_gpu_0_fails_naming_it():
  lines = job_evidence.rank_lines(job_output([0, 0]))
  verdict = job_evidence.placement(lines, 2, "gpu")
  assert not verdict.ok
  assert verdict.detail == "rank 1: used GPU [0], expected GPU 1"


def test_nccl_on_another_gpu_than_tensorflows_fails():
  output = (TF_LINE.format(rank=0, gpu=0, bus=7) + "\n"
            + TF_LINE.format(rank=1, gpu=1, bus=8) + "\n"
            + NCCL_LINE.format(rank=1, gpu=0, bus=7) + "\n")
  verdict = job_evidence.placement(job_evidence.rank_lines(output), 2, "gpu")
  assert verdict.detail == "rank 1: used GPU [0, 1], expected GPU 1"


def test_a_rank_without_device_lines_fails():
  lines = job_evidence.rank_lines(job_output([0]))
  verdict = job_evidence.placement(lines, 2, "gpu")
  assert not verdict.ok and verdict.detail.startswith(
      "rank 1: no TensorFlow `Created device` or NCCL")


def test_nccl_allreduce_on_every_rank_passes(tmp_path):
  lines = job_evidence.rank_lines(job_output([0, 1]))
  verdict = job_evidence.collective(lines, 2, "gpu",
                                    timeline(tmp_path, "NCCL_ALLREDUCE"))
  assert verdict == (
      "allreduce", True, "NCCL_ALLREDUCE x 2 in Horovod's timeline; NCCL "
      "communicators up on all 2 ranks")


def test_gloo_allreduce_on_a_gpu_node_fails(tmp_path):
  lines = job_evidence.rank_lines(job_output([0, 1]))
  verdict = job_evidence.collective(lines, 2, "gpu",
                                    timeline(tmp_path, "GLOO_ALLREDUCE"))
  assert verdict == ("allreduce", False, "no NCCL_ALLREDUCE in Horovod's "
                     "timeline (its allreduces: GLOO_ALLREDUCE)")


def test_no_nccl_communicator_fails(tmp_path):
  lines = job_evidence.rank_lines(job_output([0, 1], nccl=False))
  verdict = job_evidence.collective(lines, 2, "gpu",
                                    timeline(tmp_path, "NCCL_ALLREDUCE"))
  assert not verdict.ok
  assert verdict.detail.endswith("no NCCL `Init COMPLETE` line from ranks "
                                 "[0, 1]")


def test_a_missing_or_torn_timeline_fails(tmp_path):
  torn = tmp_path / "torn.json"
  torn.write_text('[\n{"ph": "B", "name": "NCCL_ALL')
  for path in (torn, tmp_path / "none.json"):
    assert job_evidence.timeline_activities(str(path)) is None
  assert not job_evidence.collective({}, 2, "gpu", None).ok


def test_on_cpu_the_start_lines_and_gloo_pass(tmp_path):
  lines = job_evidence.rank_lines("\n".join(
      START_LINE.format(rank=r, told=r) for r in (0, 1)))
  assert job_evidence.placement(lines, 2, "cpu") == (
      "placement", True, "rank 0 visible_device_list '0', rank 1 "
      "visible_device_list '1'")
  assert job_evidence.collective(
      lines, 2, "cpu", timeline(tmp_path, "GLOO_ALLREDUCE")).ok


def test_on_cpu_a_rank_told_another_device_fails():
  lines = job_evidence.rank_lines("\n".join(
      START_LINE.format(rank=r, told=0) for r in (0, 1)))
  assert job_evidence.placement(lines, 2, "cpu").detail == (
      "rank 1: start line says visible_device_list ['0'], expected '1'")


def test_weights_equal_pass_and_unequal_or_missing_fail():
  digests = [[1.5, -2.0, 3.25, 0.5]] * 2
  ok = job_evidence.weights({"weight_digests": digests, "weights_in_sync": True,
                             "steps": 20}, 2)
  assert ok == ("weights", True, "all 2 ranks' weight digests equal after "
                "step 20 ([1.5, -2, 3.25, ...])")
  apart = {"weight_digests": [[1.5], [1.25]], "weights_in_sync": False}
  assert not job_evidence.weights(apart, 2).ok
  one_rank = {"weight_digests": [[1.5]], "weights_in_sync": True}
  assert not job_evidence.weights(one_rank, 2).ok
  assert job_evidence.weights(None, 2).detail == (
      "no results.json: the job did not end")


def test_step_log_rate_counts_after_the_first_step(tmp_path):
  path = tmp_path / "steps.jsonl"
  path.write_text("".join(json.dumps({"step": s, "time": t}) + "\n"
                          for s, t in ((1, 10.0), (2, 10.5), (11, 12.0))))
  assert job_evidence.step_log_rate(str(path), 64) == 10 * 64 / 2.0


def test_throughput_line_against_the_bare_loop_or_alone():
  results = {"images_per_sec": 4000.0}
  assert gpu_check.throughput_line(results, 2, 2500.0, "", "gpu") == (
      "throughput: the job 4000 images/sec on 2 ranks (2000 per rank); the "
      "bare loop 2500 images/sec at np=1 on GPU 0: 0.80 of it per rank")
  assert gpu_check.throughput_line(
      results, 2, None, "no /x/tools/bare_loop.py (not a checkout): the bare "
      "loop not run", "gpu").endswith("(2000 per rank); no /x/tools/"
                                      "bare_loop.py (not a checkout): the "
                                      "bare loop not run")


def test_job_verdict_names_a_failed_or_stuck_job_in_its_own_line():
  assert gpu_check.job_verdict(0, 20, {"steps": 20}, "/o", {}).ok
  said = job_evidence.rank_lines(
      "[0]<stderr>:legacy_hvd.train: error: --data_dir=/d: no such directory"
      "\n[1]<stderr>:I1207 step 1\n")
  assert gpu_check.job_verdict(1, 20, None, "/o", said).detail == (
      "the main job exited 1 (legacy_hvd.train: error: --data_dir=/d: no "
      "such directory); its output: /o/job.log")
  assert gpu_check.job_verdict(None, 20, None, "/o", {}).detail == (
      "the main job timed out; its output: /o/job.log")
