"""The Slurm launcher's --image and --bind, judged on this node before any
rank starts (legacy_hvd/launch/container.py), against a stand-in of an image
directory: what ch-convert makes of a `make image` image, its venv's
python a link that resolves only inside the image."""
import os

import pytest

from legacy_hvd.launch import slurm
from legacy_hvd.common import cli
from legacy_hvd.launch import container


@pytest.fixture
def image(tmp_path):
  root = tmp_path / "image"
  bin_dir = root / "opt/legacy-hvd/venv/bin"
  bin_dir.mkdir(parents=True)
  os.symlink("/usr/local/bin/python3.7-not-here", bin_dir / "python")
  (root / "opt/legacy-hvd/venv/lib/python3.7/site-packages/horovod").mkdir(
      parents=True)
  for target in ("data", "runs"):
    (root / target).mkdir()
  return root


def judged(argv):
  """As the launcher's main judges them."""
  args, trainer_args = slurm.parse(argv)
  return args, slurm.image_binds(args, trainer_args)


def test_binds_translate_the_model_directory_and_make_the_task(image,
                                                               tmp_path):
  runs = tmp_path / "runs"
  (runs / "inner").mkdir(parents=True)
  (image / "runs/inner").mkdir()
  args, binds = judged([
      "--image=" + str(image), "--bind={}:/runs".format(runs),
      "--bind={}:/runs/inner/".format(tmp_path), "--model_dir=/runs/x"])
  assert container.outside("/runs/x", binds) == str(runs / "x")
  # The innermost bind wins, as the mounts do.
  assert container.outside("/runs/inner/y", binds) == str(tmp_path / "y")
  command = container.task_command(args.image, binds)
  assert command[:2] == ["ch-run", "-t"]
  assert command[-3:] == [str(image), "--", "/opt/legacy-hvd/venv/bin/python"]


@pytest.mark.parametrize("argv,expected", [
    (["--image=/no/such/image"], "no legacy-hvd image there"),
    (["--bind=/tmp:/data"], "--bind needs --image"),
    (["--image={image}", "--bind=/no/such/dir:/data"],
     "/no/such/dir is not a directory on this node"),
    (["--image={image}", "--bind={tmp}:/scratch"],
     "the image has no directory /scratch to mount it on"),
    (["--image={image}", "--bind={tmp}:data"], "expected SRC:DST"),
    (["--image={image}", "--bind={tmp}:/runs", "--model_dir=/elsewhere/x"],
     "--model_dir=/elsewhere/x: with --image, the model directory must lie "
     "under a --bind target"),
])
def test_bad_image_input_is_one_line_before_any_rank(image, tmp_path, argv,
                                                     expected):
  argv = [a.format(image=image, tmp=tmp_path) for a in argv]
  with pytest.raises(cli.UserError) as raised:
    judged(argv)
  assert expected in str(raised.value)
  assert "no rank was started" in str(raised.value)
  assert "\n" not in str(raised.value)


def test_a_horovod_trainer_needs_horovod_in_the_image(image, tmp_path):
  for path in sorted((image / "opt").rglob("horovod"), reverse=True):
    path.rmdir()
  with pytest.raises(cli.UserError, match="the image has no Horovod"):
    judged(["--image=" + str(image), "--bind={}:/runs".format(tmp_path),
            "--model_dir=/runs/x"])
  for module in slurm.STRATEGY_TRAINERS:   # no Horovod: no need of it
    judged(["--image=" + str(image), "--bind={}:/runs".format(tmp_path),
            "--model_dir=/runs/x", "--module=" + module])


def test_preflight_with_an_image_is_refused_in_one_line(image, capsys):
  with pytest.raises(SystemExit) as ended:
    slurm.main(["--image=" + str(image), "--preflight"])
  assert ended.value.code != 0
  lines = capsys.readouterr().err.strip().splitlines()
  assert len(lines) == 1, lines
  assert "--preflight runs outside the image" in lines[0]
  assert "no rank was started" in lines[0]
