"""Container images of the stacks: the machine's side of `make image`.

    python3 tools/images.py setup                   # podman, runc, debootstrap, Charliecloud
    python3 tools/images.py bases [--python 3.7]    # the Containerfile's base images, if absent
    python3 tools/images.py wheel --to .image-wheels [--from DIR]   # the cached Horovod wheel
    python tools/images.py labels --tf-version V --python-version P \
        --horovod-version H --horovod-controller C \
        [--cuda-version V --cudnn-version V --nccl-version V]   # inside an image

The Containerfile's default base is the official Python image
(docker.io/library/python:3.7-slim-bookworm, ...). Where no registry is
reachable, `bases` builds a stand-in under that same name: Debian bookworm
minbase (debootstrap, cached once under ~/.cache/legacy-hvd/images), pyenv's
CPython tree in /usr/local, the Debian libraries that tree links against
(found with ldd, as the official slim images find theirs) and the official
images' ENV; its labels say it is a stand-in. The Containerfile built here is
then the one users run elsewhere on the real image.

`wheel` hands the Makefile's cached Horovod wheel to the build stage only
when this machine runs the base's Debian release: a wheel compiled on a newer
system can need a newer glibc or libstdc++ than the image has.

`labels` runs inside an image (its last build step): the Python, TensorFlow
and Horovod in it are the ones its labels say, and so are the GPU image's
CUDA runtime, cuDNN and NCCL wheels (none in a CPU image).

Standard library only, and Python 3.7 too (`labels` runs on the TF 1.15
stack). Each failure is one line and exit status 1.
"""
import argparse
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

try:
  from importlib import metadata
except ImportError:   # Python 3.7: the TF 1.15 stack, which has no GPU wheels
  metadata = None

DEBIAN_RELEASE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "legacy-hvd", "images")
MINBASE_IMAGE = f"localhost/legacy-hvd/debian:{DEBIAN_RELEASE}-minbase"
OFFICIAL_PYTHON = "docker.io/library/python:{python}-slim-" + DEBIAN_RELEASE
# The Pythons the stacks' images take (the Makefile's IMAGE_PYTHON): TF 1.15
# ships wheels up to 3.7; TF 2.15 and TF 2.21 share 3.11.
STACK_PYTHONS = ("3.7", "3.11")

# Command -> the Debian package that brings it.
TOOLS = {"podman": "podman", "runc": "runc", "debootstrap": "debootstrap",
         "ch-run": "charliecloud-runtime", "ch-convert": "charliecloud-builders"}
CONTAINERS_CONF = "/etc/containers/containers.conf"
# podman's default ulimits (containers.conf(5)): a container asks for these,
# and setrlimit fails when the caller's hard limits are lower.
PODMAN_NOFILE = 1048576
PODMAN_NPROC = 4194304

# What the official slim images add to Debian besides CPython's own
# libraries (docker-library/python's Dockerfile).
OFFICIAL_RUNTIME_PACKAGES = ("ca-certificates", "netbase", "tzdata")
# The CPython tree as the official images install it: pip and setuptools in
# site-packages, no tests, no byte code, no static library.
KEPT_SITE_PACKAGES = re.compile(
    r"^(pip|setuptools|wheel|_distutils_hack|pkg_resources|easy_install\.py"
    r"|distutils-precedence\.pth|README)", re.IGNORECASE)
KEPT_BIN = re.compile(r"^(python|pip|pydoc|idle|2to3|easy_install|pyvenv)")
DROPPED = re.compile(r"^(test|tests|idle_test|__pycache__|libpython.*\.a|.*\.py[co])$")

# As the official debian:*-slim images (debuerreotype): no documentation,
# manuals or translations, now or from later installs; apt keeps no
# packages or caches in a layer.
DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""
APT_CLEAN = """\
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""
APT_SOURCES = f"""\
deb {DEBIAN_MIRROR} {DEBIAN_RELEASE} main
deb {DEBIAN_MIRROR} {DEBIAN_RELEASE}-updates main
deb http://deb.debian.org/debian-security {DEBIAN_RELEASE}-security main
"""

STAND_IN_CONTAINERFILE = """\
FROM {minbase}
ENV PATH=/usr/local/bin:$PATH LANG=C.UTF-8 PYTHON_VERSION={version}
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
       {packages} \\
    && rm -rf /var/lib/apt/lists/*
COPY local/ /usr/local/
RUN ldconfig \\
    && ! find /usr/local -type f -name '*.so*' -not -name '*tkinter*' \\
         -exec ldd {{}} + | grep 'not found' \\
    && python3 -B -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, venv, ensurepip" \\
    && python3 -B -m pip --version
LABEL org.opencontainers.image.title="python:{python}-slim-{release} (stand-in)" \\
      org.opencontainers.image.description="A local stand-in for the official \\
python:{python}-slim-{release}: Debian {release} minbase (debootstrap) with pyenv's \\
CPython {version} in /usr/local, built by legacy-hvd's tools/images.py where no \\
registry is reachable"
CMD ["python3"]
"""


def fail(message):
  print(f"images: {message}", file=sys.stderr)
  sys.exit(1)


def say(message):
  print(f"images: {message}", flush=True)


def run(command, what, **kwargs):
  """Runs `command`; on failure one line: `what` failed, its last line."""
  result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kwargs)
  if result.returncode:
    last = (result.stdout.strip().splitlines() or ["no output"])[-1]
    fail(f"{what} failed (exit {result.returncode}): {last}")
  return result.stdout


def image_exists(name):
  return subprocess.run(["podman", "image", "exists", name]).returncode == 0


# setup ---------------------------------------------------------------------

def install_tools():
  missing = sorted({package for command, package in TOOLS.items()
                    if not shutil.which(command)})
  if not missing:
    return
  if os.geteuid() != 0 or not shutil.which("apt-get"):
    fail(f"missing: {' '.join(missing)}; install them, e.g. "
         f"'sudo apt-get install {' '.join(missing)}'")
  say(f"installing {' '.join(missing)} (apt-get)")
  env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
  run(["apt-get", "update", "-qq"], "apt-get update", env=env)
  run(["apt-get", "install", "-y", "-qq", *missing], "apt-get install", env=env)


def cgroup2_only():
  with open("/proc/mounts") as mounts:
    return any(line.split()[1:3] == ["/sys/fs/cgroup", "cgroup2"] for line in mounts)


def needed_podman_settings():
  """containers.conf settings this machine needs, each with its reason."""
  settings = []
  if not cgroup2_only():
    settings.append(("engine", 'runtime = "runc"',
                     "crun fails on cgroups v1 or hybrid: "
                     "\"cgroups in hybrid mode not supported\""))
  if not os.path.isdir("/run/systemd/system"):
    settings.append(("engine", 'cgroup_manager = "cgroupfs"',
                     "systemd is not the init here"))
  if (resource.getrlimit(resource.RLIMIT_NOFILE)[1] < PODMAN_NOFILE
      or resource.getrlimit(resource.RLIMIT_NPROC)[1] < PODMAN_NPROC):
    settings.append(("containers", "default_ulimits = []",
                     "podman's default ulimits exceed this machine's hard limits: "
                     "setrlimit fails with EPERM"))
  return settings


def configure_podman():
  """Writes containers.conf with what podman needs here, if not already so;
  an existing file is never rewritten, only checked."""
  path = (CONTAINERS_CONF if os.geteuid() == 0 else os.path.join(
      os.path.expanduser("~"), ".config", "containers", "containers.conf"))
  settings = needed_podman_settings()
  if os.path.exists(path):
    with open(path) as f:
      text = re.sub(r"\s+", " ", f.read())
    missing = [s for _, s, _ in settings if re.sub(r"\s+", " ", s) not in text]
    if missing:
      fail(f"{path} exists without {'; '.join(missing)}: add them "
           "(podman fails here without)")
    return
  if not settings:
    return
  lines = ["# Written by legacy-hvd's tools/images.py setup: what podman needs here."]
  for table in ("containers", "engine"):
    entries = [(s, why) for t, s, why in settings if t == table]
    if entries:
      lines.append(f"[{table}]")
      for setting, why in entries:
        lines += [f"# {why}", setting]
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  say(f"wrote {path}: {', '.join(s for _, s, _ in settings)}")


def setup(_args):
  install_tools()
  configure_podman()


# bases ---------------------------------------------------------------------

def pyenv_tree(python):
  """pyenv's newest CPython `python` (e.g. 3.7 -> ~/.pyenv/versions/3.7.16)."""
  root = os.environ.get("PYENV_ROOT") or os.path.join(os.path.expanduser("~"), ".pyenv")
  trees = [t for t in glob.glob(os.path.join(root, "versions", python + ".*"))
           if re.fullmatch(re.escape(python) + r"\.\d+", os.path.basename(t))
           and os.path.isfile(os.path.join(t, "bin", "python" + python))]
  if not trees:
    fail(f"no pyenv CPython {python} under {root}/versions (the stand-in for "
         f"{OFFICIAL_PYTHON.format(python=python)} is made from it): install one, "
         f"e.g. 'pyenv install {python}'")
  return max(trees, key=lambda t: int(t.rsplit(".", 1)[1]))


def slim(rootfs):
  """The rootfs as debian:*-slim: apt sources with updates and security,
  no documentation, no package caches."""
  for path, text in (("etc/apt/sources.list", APT_SOURCES),
                     ("etc/dpkg/dpkg.cfg.d/slim", DPKG_EXCLUDES),
                     ("etc/apt/apt.conf.d/docker-clean", APT_CLEAN)):
    with open(os.path.join(rootfs, path), "w") as f:
      f.write(text)
  for directory, _, files in os.walk(os.path.join(rootfs, "usr/share/doc")):
    for name in files:
      if name != "copyright":
        os.remove(os.path.join(directory, name))
  for pattern in ("usr/share/man/*", "usr/share/info/*", "usr/share/locale/*",
                  "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb",
                  "var/lib/apt/lists/*_*"):
    for path in glob.glob(os.path.join(rootfs, pattern)):
      if os.path.basename(path) == "locale.alias":
        continue
      if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
      else:
        os.remove(path)


def minbase_tarball():
  """Debian minbase, made once with debootstrap and kept as a tarball."""
  tarball = os.path.join(CACHE, f"debian-{DEBIAN_RELEASE}-minbase.tar")
  if os.path.exists(tarball):
    return tarball
  if not shutil.which("debootstrap"):
    fail("debootstrap is missing: run 'python3 tools/images.py setup' first")
  if os.geteuid() != 0:
    fail("debootstrap needs root to make the Debian base (sudo)")
  os.makedirs(CACHE, exist_ok=True)
  with tempfile.TemporaryDirectory(dir=CACHE) as work:
    rootfs = os.path.join(work, "rootfs")
    say(f"debootstrap --variant=minbase {DEBIAN_RELEASE} (about 2 minutes, once)")
    run(["debootstrap", "--variant=minbase", DEBIAN_RELEASE, rootfs, DEBIAN_MIRROR],
        "debootstrap")
    slim(rootfs)
    run(["tar", "-C", rootfs, "-cf", tarball + ".partial", "."], "tar")
    os.replace(tarball + ".partial", tarball)
  return tarball


def ensure_minbase():
  if not image_exists(MINBASE_IMAGE):
    run(["podman", "import", "--change", 'CMD ["bash"]', minbase_tarball(),
         MINBASE_IMAGE], "podman import")
    say(f"imported {MINBASE_IMAGE}")


def copy_tree(tree, dest):
  """The CPython tree as the official images hold it, its old prefix
  (shebangs, sysconfig, python-config) rewritten to /usr/local."""
  site = glob.glob(os.path.join(tree, "lib", "python*", "site-packages"))[0]

  def ignore(directory, names):
    dropped = {n for n in names if DROPPED.match(n)}
    if directory == site:
      dropped |= {n for n in names if not KEPT_SITE_PACKAGES.match(n)}
    elif directory == os.path.join(tree, "bin"):
      dropped |= {n for n in names if not KEPT_BIN.match(n)}
    return dropped

  shutil.copytree(tree, dest, symlinks=True, ignore=ignore)
  old = tree.encode()
  for directory, _, files in os.walk(dest):
    for name in files:
      path = os.path.join(directory, name)
      if os.path.islink(path):
        continue
      with open(path, "rb") as f:
        data = f.read()
      if old in data and not data.startswith(b"\x7fELF"):
        with open(path, "wb") as f:
          f.write(data.replace(old, b"/usr/local"))


def debian_packages(copy, tree):
  """The Debian packages whose libraries the copy of `tree` links against
  (tkinter aside, as in the official slim images: no Tk there). Its RPATH
  still names `tree`: what resolves there is its own."""
  libraries = set()
  for directory, _, files in os.walk(copy):
    for name in files:
      path = os.path.join(directory, name)
      if "tkinter" in name or os.path.islink(path):
        continue
      with open(path, "rb") as f:
        header = f.read(18)
      # ELF executables and shared objects (e_type 2, 3), not object files
      if header[:4] != b"\x7fELF" or header[16] not in (2, 3):
        continue
      for line in run(["ldd", path], f"ldd {path}").splitlines():
        if "not found" in line:
          fail(f"{os.path.relpath(path, copy)} in {tree}: {line.strip()}")
        match = re.search(r"=> (/\S+)", line)
        if match and not match.group(1).startswith(tree):
          libraries.add(match.group(1))
  packages = set()
  for library in sorted(libraries):
    real = os.path.realpath(library)
    found = subprocess.run(["dpkg", "-S", "*/" + os.path.basename(real)],
                           stdout=subprocess.PIPE, universal_newlines=True).stdout
    owners = [line.split(": ", 1)[0] for line in found.splitlines()
              if os.path.realpath(line.split(": ", 1)[-1]) == real]
    if not owners:
      fail(f"{library}, which {tree} links against, is in no Debian package")
    packages.update(p.split(":")[0] for p in owners[0].split(", "))
  return sorted(packages)


def build_stand_in(python):
  name = OFFICIAL_PYTHON.format(python=python)
  tree = pyenv_tree(python)
  version = os.path.basename(tree)
  ensure_minbase()
  say(f"building {name}: a stand-in from Debian {DEBIAN_RELEASE} minbase + {tree}")
  with tempfile.TemporaryDirectory() as context:
    copy = os.path.join(context, "local")
    copy_tree(tree, copy)
    packages = sorted(set(OFFICIAL_RUNTIME_PACKAGES) | set(debian_packages(copy, tree)))
    with open(os.path.join(context, "Containerfile"), "w") as f:
      f.write(STAND_IN_CONTAINERFILE.format(
          minbase=MINBASE_IMAGE, version=version, python=python,
          release=DEBIAN_RELEASE, packages=" ".join(packages)))
    run(["podman", "build", "--network=host", "-t", name, context],
        f"building {name}")
  say(f"built {name} (CPython {version})")


def bases(args):
  if not shutil.which("podman"):
    fail("podman is missing: run 'python3 tools/images.py setup' first")
  for python in args.python:
    name = OFFICIAL_PYTHON.format(python=python)
    if image_exists(name):
      say(f"{name}: present")
      continue
    pulled = subprocess.run(["podman", "pull", "-q", name], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, universal_newlines=True)
    if pulled.returncode:
      say(f"{name}: cannot pull it, a stand-in is built "
          f"({(pulled.stderr.strip().splitlines() or ['no output'])[-1]})")
      build_stand_in(python)


# wheel ---------------------------------------------------------------------

def host_release():
  try:
    with open("/etc/os-release") as f:
      fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
  except OSError:
    return "unknown"
  return fields.get("VERSION_CODENAME", "").strip('"') or fields.get("ID", "unknown")


def wheel(args):
  shutil.rmtree(args.to, ignore_errors=True)
  os.makedirs(args.to)
  if not args.source:
    say("no Horovod in this stack: no wheel")
    return
  wheels = glob.glob(os.path.join(args.source, "horovod-*.whl"))
  if not wheels:
    say(f"no cached Horovod wheel in {args.source}: the build stage compiles it "
        "(a few minutes)")
  elif host_release() != DEBIAN_RELEASE:
    say(f"this machine runs {host_release()}, the image Debian {DEBIAN_RELEASE}: "
        "its cached wheel may need a newer glibc; the build stage compiles Horovod")
  else:
    # Under the cache's own name: the build stage's make picks it by its key,
    # and ignores it if it is another stack's.
    shutil.copytree(args.source, os.path.join(args.to, os.path.basename(args.source)))
    say(f"the build stage takes the cached {wheels[0]}")


# labels --------------------------------------------------------------------

# A GPU label -> the wheel TensorFlow's and-cuda extra installs for it.
GPU_WHEELS = (("cuda", "nvidia-cuda-runtime-cu12"), ("cudnn", "nvidia-cudnn-cu12"),
              ("nccl", "nvidia-nccl-cu12"))


def installed(distribution):
  """The version of `distribution` installed, or "none"."""
  if metadata is None:
    return "none"
  try:
    return metadata.version(distribution)
  except metadata.PackageNotFoundError:
    return "none"

def labels(args):
  """Inside the image: its Python, TensorFlow and Horovod are the labels'."""
  python = "%d.%d.%d" % sys.version_info[:3]
  if not (python + ".").startswith(args.python_version + "."):
    fail(f"the image's Python is {python}, its label says {args.python_version}")
  try:
    import tensorflow as tf
  except ImportError as e:
    fail(f"TensorFlow does not import: {e}")
  if tf.version.VERSION != args.tf_version:
    fail(f"the image's TensorFlow is {tf.version.VERSION}, its label says "
         f"{args.tf_version}")
  try:
    import horovod
    horovod_version = horovod.__version__
  except ImportError:
    horovod_version = "none"
  if horovod_version != args.horovod_version:
    fail(f"the image's Horovod is {horovod_version}, its label says "
         f"{args.horovod_version} (pass --build-arg HOROVOD_VERSION={horovod_version})")
  if (horovod_version == "none") != (args.horovod_controller == "none"):
    fail(f"the image's Horovod is {horovod_version}, its controller label says "
         f"{args.horovod_controller}: expected none with no Horovod, else gloo or mpi")
  for label, distribution in GPU_WHEELS:
    version, said = installed(distribution), getattr(args, label + "_version")
    if version != said:
      fail(f"the image's {distribution} is {version}, its {label} label says "
           f"{said} (pass --build-arg {label.upper()}_VERSION={version})")
  gpu = ("" if args.cuda_version == "none" else
         f", CUDA {args.cuda_version}, cuDNN {args.cudnn_version}, NCCL {args.nccl_version}")
  say(f"labels true: Python {python}, TensorFlow {tf.version.VERSION}, "
      f"Horovod {horovod_version}, controller {args.horovod_controller}{gpu} "
      "(check_env checks it is built)")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  commands = parser.add_subparsers(dest="command")
  commands.required = True
  commands.add_parser("setup", help="install podman, runc, debootstrap and "
                      "Charliecloud if missing; containers.conf for podman here")
  parser_bases = commands.add_parser(
      "bases", help="the official Python base images, or stand-ins, if absent")
  parser_bases.add_argument("--python", nargs="+", default=list(STACK_PYTHONS),
                            choices=STACK_PYTHONS)
  parser_wheel = commands.add_parser(
      "wheel", help="empty --to, then copy the cached Horovod wheel from --from")
  parser_wheel.add_argument("--to", required=True)
  parser_wheel.add_argument("--from", dest="source",
                            help="the Makefile's wheel cache; none: no Horovod")
  parser_labels = commands.add_parser(
      "labels", help="inside an image: its stack is what its labels say")
  parser_labels.add_argument("--tf-version", required=True)
  parser_labels.add_argument("--python-version", required=True)
  parser_labels.add_argument("--horovod-version", required=True)
  parser_labels.add_argument("--horovod-controller", required=True,
                             choices=("gloo", "mpi", "none"))
  for label, distribution in GPU_WHEELS:
    parser_labels.add_argument(f"--{label}-version", default="none",
                               help=f"{distribution}'s version (none: a CPU image)")
  args = parser.parse_args()
  {"setup": setup, "bases": bases, "wheel": wheel, "labels": labels}[args.command](args)


if __name__ == "__main__":
  main()
