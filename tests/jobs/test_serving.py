"""Export, reload in plain TF2, predict, and plot a run trained for a few steps."""
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v2 as tf   # the TF2 API, on TF 1.15 too

from legacy_hvd.data import cifar10
from tests.helpers import REPO, assert_ok, run_module


@pytest.fixture(scope="module")
def trained(tf1_run, tf1_evaluation):
  """(model_dir, data_dir, evaluate's metrics) of the shared np=2 run."""
  return tf1_run.model_dir, tf1_run.data_dir, tf1_evaluation[0]


def export(model_dir, out, export_format, user=None):
  process = (user.run_module if user else run_module)(
      "legacy_hvd.export", [f"--model_dir={model_dir}", f"--out={out}",
                            f"--format={export_format}"])
  assert_ok(process)
  assert process.stdout.strip() == str(out)


def test_saved_model_scores_exactly_like_evaluate(trained, tmp_path):
  model_dir, data_dir, metrics = trained
  export(model_dir, tmp_path / "saved", "saved_model")
  serve = tf.saved_model.load(str(tmp_path / "saved")).signatures[
      "serving_default"]
  data = cifar10.load(data_dir)
  outputs = serve(images=tf.constant(data.test_images))
  classes = outputs["classes"].numpy()
  assert outputs["probabilities"].shape == (len(classes), 10)
  np.testing.assert_allclose(outputs["probabilities"].numpy().sum(axis=1), 1,
                             rtol=1e-5)
  accuracy = float(np.mean(classes == data.test_labels))
  assert accuracy == metrics["test_accuracy"]
  assert accuracy > 0.2


def test_frozen_graph_agrees_with_saved_model(trained, tmp_path):
  model_dir, data_dir, metrics = trained
  export(model_dir, tmp_path / "frozen.pb", "frozen_graph")
  graph_def = tf.compat.v1.GraphDef.FromString(
      (tmp_path / "frozen.pb").read_bytes())
  assert not [n for n in graph_def.node if n.op.startswith("Variable")]
  frozen = tf.compat.v1.wrap_function(
      lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
  classify = frozen.prune("images:0", "classes:0")
  data = cifar10.load(data_dir)
  classes = classify(tf.constant(data.test_images)).numpy()
  assert float(np.mean(classes == data.test_labels)) == metrics["test_accuracy"]


def test_export_refuses_to_overwrite(trained, tmp_path):
  model_dir, _, _ = trained
  (tmp_path / "taken").mkdir()
  process = run_module("legacy_hvd.export", [f"--model_dir={model_dir}",
                                             f"--out={tmp_path / 'taken'}"])
  assert process.returncode == 1
  assert process.stderr.strip().splitlines()[-1].endswith(
      "already exists; expected a new path (an export is never overwritten)")
  assert list((tmp_path / "taken").iterdir()) == []


def test_predict_prints_classes_for_png_and_jpeg(trained, tmp_path, user):
  # Exported and predicted by the user who trained (not root).
  tmp_path = user.fresh("serving") if user else tmp_path
  model_dir, data_dir, _ = trained
  export(model_dir, tmp_path / "saved", "saved_model", user)
  data = cifar10.load(data_dir)
  serve = tf.saved_model.load(str(tmp_path / "saved")).signatures[
      "serving_default"]
  expected = serve(images=tf.constant(data.test_images[:2]))["classes"].numpy()
  png = tmp_path / "a.png"
  png.write_bytes(tf.image.encode_png(data.test_images[0]).numpy())
  big = tmp_path / "b.jpg"     # a 64x64 JPEG: resized on the way in
  big.write_bytes(tf.image.encode_jpeg(tf.cast(tf.image.resize(
      data.test_images[1], (64, 64)), tf.uint8)).numpy())
  process = (user.run_module if user else run_module)(
      "legacy_hvd.predict", [f"--model={tmp_path / 'saved'}", str(png),
                             str(big)])
  assert_ok(process)
  lines = process.stdout.strip().splitlines()
  assert len(lines) == 2
  assert lines[0].startswith(f"{png}: {cifar10.CLASS_NAMES[expected[0]]} ")
  assert lines[1].endswith("(resized to 32x32)")
  assert lines[0].count(",") == 2          # --top_k=3


def test_predict_names_an_unreadable_image(trained, tmp_path):
  model_dir, _, _ = trained
  bad = tmp_path / "bad.png"
  bad.write_bytes(b"not an image")
  process = run_module("legacy_hvd.predict", [f"--model={tmp_path}", str(bad)])
  assert process.returncode == 1
  assert f"{bad}: not a readable PNG or JPEG image" in process.stderr


def test_plot_run_writes_a_figure(trained, tmp_path):
  model_dir, _, _ = trained
  out = tmp_path / "run.png"
  process = subprocess.run([sys.executable, "tools/plot_run.py",
                            f"--model_dir={model_dir}", f"--out={out}"],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
  assert_ok(process)
  import matplotlib.image
  pixels = matplotlib.image.imread(str(out))
  assert pixels.shape[0] >= 500 and pixels.shape[1] >= 800
  from tools.plot_run import read_scalars
  scalars = read_scalars(str(model_dir))
  assert set(scalars) == {"loss", "accuracy", "learning_rate", "images_per_sec"}
  assert scalars["loss"][0][-1] >= 30            # every 10 of 40 steps
  assert scalars["images_per_sec"][0] == [10, 20, 30, 40]


def test_plot_run_without_events_is_one_line(tmp_path):
  process = subprocess.run([sys.executable, "tools/plot_run.py",
                            f"--model_dir={tmp_path}"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
  assert process.returncode == 1
  assert process.stderr.strip() == (f"plot_run: error: --model_dir={tmp_path}: "
                                    "no training summaries found; expected "
                                    "event files written by rank 0")
