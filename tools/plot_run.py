"""Plots a training run from its TensorBoard event files.

    python tools/plot_run.py --model_dir=DIR [--out=PNG]

Reads the scalars rank 0 wrote (loss, accuracy, learning_rate,
images_per_sec) with TensorBoard's own event reader and writes a 2x2 PNG,
by default DIR/run.png. Exits 1 with one line when DIR holds no events.
"""
import argparse
import os
import sys

TAGS = (("loss", "training loss"), ("accuracy", "training accuracy (batch)"),
        ("learning_rate", "learning rate"), ("images_per_sec", "images/sec"))


def read_scalars(model_dir):
  """{tag: (steps, values)} for the TAGS present in DIR's event files.

  The TF1 path writes classic scalar summaries, the TF2 path's tf.summary
  writes tensors: both are read.
  """
  from tensorboard.backend.event_processing import event_accumulator
  from tensorboard.util import tensor_util
  if not any(name.startswith("events.out.tfevents")
             for name in os.listdir(model_dir)):
    return {}   # (TensorBoard 1.15's reader fails on a directory without)
  accumulator = event_accumulator.EventAccumulator(
      model_dir, size_guidance={event_accumulator.SCALARS: 0,
                                event_accumulator.TENSORS: 0})
  accumulator.Reload()
  tags = accumulator.Tags()
  scalars = {}
  for tag, _ in TAGS:
    if tag in tags["scalars"]:
      events = accumulator.Scalars(tag)
      scalars[tag] = ([e.step for e in events], [e.value for e in events])
    elif tag in tags["tensors"]:
      events = accumulator.Tensors(tag)
      scalars[tag] = ([e.step for e in events],
                      [float(tensor_util.make_ndarray(e.tensor_proto))
                       for e in events])
  return scalars


def plot(scalars, title, path):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
  for axis, (tag, label) in zip(axes.flat, TAGS):
    if tag in scalars:
      axis.plot(*scalars[tag], marker=".", linewidth=1)
    else:
      axis.text(0.5, 0.5, "not recorded", ha="center", va="center",
                transform=axis.transAxes)
    axis.set_title(label)
    axis.set_ylabel(label)
    axis.grid(alpha=0.3)
  for axis in axes[1]:
    axis.set_xlabel("global step")
  figure.suptitle(title)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--out", help="PNG to write (default DIR/run.png)")
  args = parser.parse_args(argv)
  if not os.path.isdir(args.model_dir):
    sys.exit(f"plot_run: error: --model_dir={args.model_dir}: no such "
             "directory")
  scalars = read_scalars(args.model_dir)
  if not scalars:
    sys.exit(f"plot_run: error: --model_dir={args.model_dir}: no training "
             "summaries found; expected event files written by rank 0")
  out = args.out or os.path.join(args.model_dir, "run.png")
  plot(scalars, f"Training run: {os.path.abspath(args.model_dir)}", out)
  print(out)


if __name__ == "__main__":
  main()
