"""The trainer under horovodrun -np 2: rank-0-only outputs, resume, sync."""
import os
import stat

from tests.helpers import assert_ok, horovodrun, read_results

# Rank 0 creates files with mode 644, every other rank with 600: any file in
# the model directory that is not group-readable was written by another rank.
RANK_UMASK = 'if [ "$HOROVOD_RANK" != 0 ]; then umask 077; else umask 022; fi'


def train(model_dir, *args):
  return horovodrun(2, "legacy_hvd.train",
                    [f"--model_dir={model_dir}", "--log_every_n_steps=20",
                     "--save_checkpoints_steps=1000", *args],
                    wrapper=RANK_UMASK)


def written_by_other_ranks(model_dir):
  return [os.path.join(d, f) for d, _, files in os.walk(model_dir)
          for f in files
          if not os.stat(os.path.join(d, f)).st_mode & stat.S_IRGRP]


def test_train_resume_and_rank0_only_outputs(tmp_path, isolated_cache):
  model_dir = tmp_path / "model"
  first = train(model_dir, "--max_steps=60")
  assert_ok(first)
  results = read_results(model_dir)
  assert results["world_size"] == 2 and results["global_batch"] == 128
  assert results["start_step"] == 0 and results["steps"] == 60
  assert results["test_examples"] == 2000
  assert results["test_accuracy"] > 0.2       # chance is 0.1
  assert "embedded" in results["data_source"]
  # Both ranks end with identical weights, bit for bit.
  digests = results["weight_digests"]
  assert len(digests) == 2 and digests[0] == digests[1]
  assert results["weights_in_sync"] is True
  assert (model_dir / "checkpoint").exists()
  assert any(f.name.startswith("events.out.tfevents") for f in model_dir.iterdir())
  assert written_by_other_ranks(model_dir) == []
  assert "Test accuracy" in first.stderr + first.stdout

  second = train(model_dir, "--max_steps=100")
  assert_ok(second)
  resumed = read_results(model_dir)
  assert resumed["start_step"] == 60 and resumed["steps"] == 100
  assert resumed["weight_digests"][0] == resumed["weight_digests"][1]
  assert resumed["weight_digests"][0] != digests[0]
  assert "Resuming from global step 60" in second.stderr + second.stdout
  assert written_by_other_ranks(model_dir) == []
