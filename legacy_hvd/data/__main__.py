"""Data commands: python -m legacy_hvd.data download --dest DIR [--url URL]
fetches, checks and extracts the official CIFAR-10 archive atomically and
prints the directory to train with (--data_dir)."""
from absl import flags

from legacy_hvd.common import cli
from legacy_hvd.data import cifar10
from legacy_hvd.data import download

FLAGS = flags.FLAGS
COMMANDS = ("download",)


def main(argv):
  if len(argv) != 2 or argv[1] not in COMMANDS:
    cli.fail("expected a command: python -m legacy_hvd.data download "
             "--dest DIR", cli.USAGE_ERROR)
  try:
    print(download.download(FLAGS.dest, FLAGS.url, FLAGS.checksum))
  except cifar10.DataError as e:
    cli.fail(str(e))


def run():
  """Console-script entry point (legacy-hvd-data)."""
  flags.DEFINE_string("dest", None, "Directory to download and extract into.")
  flags.DEFINE_string("url", download.DEFAULT_URL, "Where the archive is.")
  flags.DEFINE_string("checksum", download.DEFAULT_CHECKSUM,
                      "Expected digest of the archive, md5:HEX or sha256:HEX.")
  flags.mark_flag_as_required("dest")
  cli.run(main, positional_args=True)


if __name__ == "__main__":
  run()
