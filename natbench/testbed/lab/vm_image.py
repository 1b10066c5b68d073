"""VM disk images for the lab, built from Debian's packages (never downloaded ready-made).

``natbench lab image build [NAME]`` runs :func:`build_image`: debootstrap (minbase) of Debian 12,
then a chroot install of the image's packages (for ``jool``: the kernel with its headers, so that
``jool-dkms`` builds the module for that kernel, checked with ``modinfo``), natbench's
configuration (serial console, management NIC, sshd with a host key and a client key made at build
time), and ``mkfs.ext4 -d`` into a raw disk. The kernel and initrd are copied out beside the disk for
QEMU's ``-kernel``/``-initrd``.

The ``jool-mapt`` image holds Jool built from source (MAP-T exists only in Jool's 4.2 release
candidates, which Debian does not ship): the chroot gets the kernel headers, DKMS and the build
tools, and one more step compiles the given source (``--jool-source PATH|URL``, default the pinned
public v4.2.0-rc3 archive; :mod:`~natbench.testbed.lab.jool_source`,
:mod:`~natbench.testbed.lab.jool_build`). The source's digest is part of its cache key, and its
manifest records the source and ``jool_mapt --version``.

Images are cached and content-addressed in :func:`cache_dir` (``NATBENCH_IMAGE_CACHE``, default
``/var/cache/natbench/images``): the key is the hash of the package list and natbench's image recipe
(:func:`recipe_key`). An image is built in a scratch directory and renamed into place only when every
step passed, with a manifest listing its files and their sizes written last; an entry whose manifest is
missing or whose files do not match is broken, removed and rebuilt, never booted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from natbench.config.paths import env_path, path_problem
from natbench.config.redact import redact_credentials
from natbench.config.source import read_user_file
from natbench.errors import ConfigError
from natbench.testbed.lab.host import LabError
from natbench.testbed.lab.jool_build import JOOL_MODULES, build_script, install_source
from natbench.testbed.lab.jool_source import DEFAULT_SOURCE, Fetcher, JoolSource, resolve_source

DEFAULT_CACHE_DIR = Path("/var/cache/natbench/images")
"""Where images are cached unless ``NATBENCH_IMAGE_CACHE`` names another directory."""

MANIFEST = "manifest.json"
"""The file written last into a complete image directory."""

MAX_MANIFEST_BYTES = 1 << 20
"""Largest manifest read from the cache (natbench writes about 2 kB): a regular file only, a device or FIFO in its
place (the cache directory is whatever ``NATBENCH_IMAGE_CACHE`` names) makes the entry broken, never a hang."""

BUILD_TIMEOUT = 3600.0
"""Seconds one build step may take at most (a loaded 2-CPU machine needs ~11 min for the whole build)."""

_TOOLS = {
    "debootstrap": "debootstrap",
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "mkfs.ext4": "e2fsprogs",
    "ssh-keygen": "openssh-client",
}
"""Host commands the image build and the VM lab need, and the Debian package of each."""


@dataclass(frozen=True)
class ImageRecipe:
    """How one image is made: its Debian suite and packages, and the files natbench writes into it."""

    name: str
    """The image's name (``natbench lab image build NAME``, ``access: {kind: lab, vm: NAME}``)."""
    suite: str
    """Debian suite debootstrapped."""
    packages: tuple[str, ...]
    """Packages installed in the chroot after debootstrap."""
    modules: tuple[str, ...] = ()
    """Kernel modules that must exist for the image's kernel (checked with ``modinfo``)."""
    mirror: str = "http://deb.debian.org/debian"
    """Debian mirror."""
    size: str = "3G"
    """Size of the (sparse) raw disk."""
    files: dict[str, str] = field(default_factory=dict)
    """Files written into the root file system (path -> content)."""
    commands: tuple[str, ...] = ()
    """Shell commands run in the chroot after the files are written."""
    source: str | None = None
    """What the image compiles from source after the package install: ``"jool"`` (Jool, given at build
    time; its digest joins the cache key), or None (packages only)."""


_MGMT_UNIT = """[Unit]
Description=natbench management NIC (QEMU user network)
Before=ssh.service
After=systemd-udevd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'ip link set lo up; for i in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done; \
ip addr replace 10.0.2.15/24 dev eth0; ip link set eth0 up; ip route replace default via 10.0.2.2'

[Install]
WantedBy=multi-user.target
"""

_SSHD_CONFIG = """# natbench: keys only, root by key, one pinned host key made at image build time
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
Subsystem sftp internal-sftp
"""

_COMMON_FILES = {
    "/etc/hostname": "natbench-vm\n",
    "/etc/hosts": "127.0.0.1 localhost\n127.0.1.1 natbench-vm\n",
    "/etc/fstab": "/dev/vda / ext4 rw,noatime 0 1\n",
    "/etc/systemd/system/natbench-mgmt.service": _MGMT_UNIT,
    "/etc/ssh/sshd_config": _SSHD_CONFIG,
    "/etc/modules-load.d/natbench.conf": "virtio_net\n",
}

_COMMON_COMMANDS = (
    "systemctl enable natbench-mgmt.service ssh.service",
    "systemctl mask systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service || true",
    "passwd -d root",
    "rm -f /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub",
    "apt-get clean",
)

_KERNEL = ("linux-image-amd64", "linux-headers-amd64")
"""The guest kernel and its headers (DKMS builds against them)."""
_RUNTIME = ("openssh-server", "iproute2", "iptables", "conntrack", "procps", "ethtool", "kmod", "udev", "systemd-sysv")
"""What every lab image runs with: SSH, the network tools the recipes call, module loading, an init."""

IMAGES: dict[str, ImageRecipe] = {
    "jool": ImageRecipe(
        name="jool",
        suite="bookworm",
        packages=(*_KERNEL, "jool-dkms", "jool-tools", *_RUNTIME),
        modules=("jool", "jool_siit"),
        files=_COMMON_FILES,
        commands=_COMMON_COMMANDS,
    ),
    "jool-mapt": ImageRecipe(
        name="jool-mapt",
        suite="bookworm",
        packages=(
            *_KERNEL,
            "dkms",
            "gcc",
            "make",
            "libc6-dev",
            "autoconf",
            "automake",
            "libtool",
            "pkg-config",
            "libnl-genl-3-dev",
            "libxtables-dev",
            *_RUNTIME,
        ),
        modules=JOOL_MODULES,
        # conntrack loaded at boot: recipes read its sysctls before any rule loads it (iptables-nat44)
        files={**_COMMON_FILES, "/etc/modules-load.d/natbench.conf": "virtio_net\nnf_conntrack\n"},
        commands=_COMMON_COMMANDS,
        source="jool",
    ),
}
"""The images natbench knows how to build, by name."""


def cache_dir(given: Path | str | None = None) -> Path:
    """``given``, else ``NATBENCH_IMAGE_CACHE``, else :data:`DEFAULT_CACHE_DIR` (read now); ConfigError naming the
    variable (or the directory given) and the limit when it cannot be a path."""
    if given:
        problem = path_problem(str(given))
        if problem is not None:
            raise ConfigError(f"the image cache directory is {problem}: not a directory name", field="--cache")
        return Path(given)
    return env_path("NATBENCH_IMAGE_CACHE") or DEFAULT_CACHE_DIR


def recipe_key(recipe: ImageRecipe, source_digest: str | None = None) -> str:
    """Content address of an image: hash of its suite, mirror, packages, modules, files and commands, and for
    an image built from source, of that source (``source_digest``; default: the pinned release's)."""
    body: dict[str, object] = {
        "format": 1,
        "suite": recipe.suite,
        "mirror": recipe.mirror,
        "size": recipe.size,
        "packages": sorted(recipe.packages),
        "modules": list(recipe.modules),
        "files": dict(sorted(recipe.files.items())),
        "commands": list(recipe.commands),
        "build": _BUILD_REVISION,
    }
    if recipe.source:
        body["source"] = {"kind": recipe.source, "digest": source_digest or DEFAULT_SOURCE.tree}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


_BUILD_REVISION = 1
"""Bumped whenever :func:`build_image`'s own steps change what ends up in an image."""


@dataclass(frozen=True)
class Image:
    """A complete, cached image: its directory and what QEMU and SSH need from it."""

    name: str
    """The image's name."""
    key: str
    """Its content address."""
    path: Path
    """Its cache directory."""
    manifest: dict[str, object]
    """Its manifest (packages, kernel version, module versions, build times)."""

    @property
    def disk(self) -> Path:
        """The raw ext4 root file system."""
        return self.path / "disk.img"

    @property
    def kernel(self) -> Path:
        """The image's kernel (booted with ``-kernel``)."""
        return self.path / "vmlinuz"

    @property
    def initrd(self) -> Path:
        """The image's initrd."""
        return self.path / "initrd.img"

    @property
    def client_key(self) -> Path:
        """The private key natbench logs in with (root)."""
        return self.path / "id_ed25519"

    @property
    def host_key(self) -> str:
        """The image's pinned SSH host public key (``ssh-ed25519 AAAA...``)."""
        return " ".join((self.path / "ssh_host_ed25519_key.pub").read_text().split()[:2])

    def known_hosts_line(self, host: str, port: int) -> str:
        """A known_hosts line pinning the image's host key for ``host:port``."""
        name = host if port == 22 else f"[{host}]:{port}"
        return f"{name} {self.host_key}\n"


_IMAGE_FILES = ("disk.img", "vmlinuz", "initrd.img", "id_ed25519", "id_ed25519.pub", "ssh_host_ed25519_key.pub")


def _check(path: Path) -> dict[str, object] | None:
    """The manifest of a complete image at ``path``, or None when it is missing or broken."""
    try:
        manifest = json.loads(read_user_file(path / MANIFEST, "image manifest", limit=MAX_MANIFEST_BYTES))
        sizes = manifest["sizes"]
        for name in _IMAGE_FILES:
            if (path / name).stat().st_size != sizes[name]:
                return None
    except (OSError, ValueError, KeyError, TypeError, ConfigError):
        return None
    return dict(manifest)


def find_image(name: str, *, cache: Path | str | None = None, source_digest: str | None = None) -> Image | None:
    """The complete cached image ``name`` for natbench's current recipe, or None (a broken entry is removed).

    For an image built from source, ``source_digest`` names the source; without it the pinned default
    release's image is looked up first, then the newest complete image of this recipe built from any source
    (so an image built with ``--jool-source`` serves campaigns that only name the image).
    """
    recipe = _recipe(name)
    key = recipe_key(recipe, source_digest)
    found = _complete(name, key, cache_dir(cache) / f"{name}-{key}")
    if found is not None or not recipe.source or source_digest is not None:
        return found
    newest: Image | None = None
    for path in sorted(cache_dir(cache).glob(f"{name}-*")):
        manifest = _check(path)
        source = manifest.get("source") if manifest else None
        if (
            not manifest
            or not isinstance(source, dict)
            or recipe_key(recipe, source.get("tree_sha256")) != path.name[len(name) + 1 :]
        ):
            continue
        if newest is None or str(manifest.get("built", "")) > str(newest.manifest.get("built", "")):
            newest = Image(name, path.name[len(name) + 1 :], path, manifest)
    return newest


def _complete(name: str, key: str, path: Path) -> Image | None:
    """The image at ``path`` if it is complete; a broken entry is removed."""
    if not path.exists():
        return None
    manifest = _check(path)
    if manifest is None:
        shutil.rmtree(path, ignore_errors=True)
        return None
    return Image(name, key, path, manifest)


def _recipe(name: str) -> ImageRecipe:
    try:
        return IMAGES[name]
    except KeyError:
        raise LabError(f"no VM image named {name!r} (known: {', '.join(sorted(IMAGES))})") from None


def missing_tools(tools: tuple[str, ...] = tuple(_TOOLS)) -> list[str]:
    """One line per missing host command, naming the Debian package that provides it."""
    return [
        f"{tool} not found: install the Debian package {_TOOLS[tool]} (apt-get install {_TOOLS[tool]})"
        for tool in tools
        if shutil.which(tool) is None
    ]


@dataclass
class BuildStep:
    """One timed step of an image build."""

    name: str
    """What the step does."""
    seconds: float = 0.0
    """How long it took."""
    log: Path | None = None
    """Its log file."""


Progress = Callable[[str], None]


class _Builder:
    def __init__(self, recipe: ImageRecipe, work: Path, progress: Progress) -> None:
        self.recipe = recipe
        self.work = work
        self.root = work / "rootfs"
        self.progress = progress
        self.steps: list[BuildStep] = []
        self.total = 7
        self.kernel_version = ""
        self.module_versions: dict[str, str] = {}
        self.jool_version = ""
        """``jool_mapt --version`` of an image built from Jool's source."""
        self.typical = last_build_steps(recipe.name, work.parent)
        """Seconds each step took in the newest earlier build of this image found in the cache (ETA)."""

    def step(self, name: str, fn: Callable[[Path], None]) -> None:
        n = len(self.steps) + 1
        log = self.work / "logs" / f"{n:02d}-{name.split()[0]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        expected = self.typical.get(name)
        left = sum(self.typical.values()) - sum(self.typical.get(s.name, 0.0) for s in self.steps)
        eta = f" (last build: {expected:.0f} s; the build about {left:.0f} s left)" if expected is not None else ""
        self.progress(f"[{n}/{self.total}] {name} ...{eta}")
        start = time.monotonic()
        try:
            fn(log)
        except (LabError, OSError, subprocess.SubprocessError) as exc:
            kept = self._keep_logs()
            raise LabError(
                f"image {self.recipe.name}: step {n} ({name}) failed after {time.monotonic() - start:.0f} s: {exc}"
                f" (log kept: {kept / log.name})"
            ) from None
        step = BuildStep(name, time.monotonic() - start, log)
        self.steps.append(step)
        self.progress(f"[{n}/{self.total}] {name}: done in {step.seconds:.1f} s")

    def _keep_logs(self) -> Path:
        kept = self.work.parent / f"failed-{self.recipe.name}-{time.strftime('%Y%m%dT%H%M%S')}"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(self.work / "logs", kept)
        return kept

    def sh(self, cmd: list[str], log: Path, *, env: dict[str, str] | None = None) -> None:
        with log.open("a") as out:
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            proc = subprocess.run(
                cmd, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT, env={**os.environ, **(env or {})}
            )
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise LabError(f"{' '.join(cmd[:3])}... exited {proc.returncode}: {' | '.join(tail)}")

    def chroot(self, script: str, log: Path) -> None:
        env = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        self.sh(["chroot", str(self.root), "/bin/sh", "-ec", script], log, env=env)


def last_build_steps(name: str, cache: Path) -> dict[str, float]:
    """Step durations (s) of the newest build of image ``name`` in ``cache`` (any recipe key), from its
    manifest; empty when there is none."""
    newest: tuple[str, dict[str, float]] = ("", {})
    for manifest in cache.glob(f"{name}-*/{MANIFEST}"):
        try:
            data = json.loads(read_user_file(manifest, "image manifest", limit=MAX_MANIFEST_BYTES))
            steps = {str(k): float(v) for k, v in (data.get("steps") or {}).items()}
        except (OSError, ValueError, TypeError, AttributeError, ConfigError):
            continue
        built = str(data.get("built", ""))
        if steps and built >= newest[0]:
            newest = (built, steps)
    return newest[1]


def _mounted(root: Path) -> list[Path]:
    return [root / "proc", root / "sys", root / "dev"]


def build_image(
    name: str = "jool",
    *,
    cache: Path | str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    jool_source: str | os.PathLike[str] | None = None,
    fetch: Fetcher | None = None,
) -> Image:
    """Build image ``name`` into the cache (or return the cached one unless ``force``); needs root.

    An image built from source (``jool-mapt``) compiles ``jool_source`` (a source tree, a release tarball
    or a URL; None: the pinned public release, downloaded with ``fetch``); a source that cannot be had
    raises :class:`~natbench.testbed.lab.jool_source.JoolSourceError` naming ``--jool-source``.
    Every step is timed and reported through ``progress``; a failed step raises :class:`LabError`
    naming the step and the kept log.
    """
    recipe = _recipe(name)
    say = progress or (lambda _msg: None)
    if jool_source is not None and not recipe.source:
        raise LabError(f"image {name} is built from Debian's packages only: --jool-source applies to jool-mapt")
    if not force and jool_source is None and (found := find_image(name, cache=cache)) is not None:
        say(f"image {name}: cached at {found.path}")
        return found
    with tempfile.TemporaryDirectory(prefix=f"natbench-{name}-source-") as scratch:
        source = _source(recipe, jool_source, Path(scratch), fetch, say)
        key = recipe_key(recipe, source.digest if source else None)
        final = cache_dir(cache) / f"{name}-{key}"
        if not force and (found := _complete(name, key, final)) is not None:
            say(f"image {name}: cached at {found.path}")
            return found
        return _build(recipe, key, final, source, say)


def _source(
    recipe: ImageRecipe, given: str | os.PathLike[str] | None, scratch: Path, fetch: Fetcher | None, say: Progress
) -> JoolSource | None:
    """The checked source an image compiles, unpacked in ``scratch`` (None for a packages-only image)."""
    if not recipe.source:
        return None
    say(f"image {recipe.name}: Jool source {redact_credentials(os.fspath(given or DEFAULT_SOURCE.url))}")
    source = resolve_source(given, scratch, fetch=fetch)
    say(f"image {recipe.name}: Jool {source.release}, source tree sha256 {source.digest}")
    return source


def _build(recipe: ImageRecipe, key: str, final: Path, source: JoolSource | None, say: Progress) -> Image:
    name = recipe.name
    cache = final.parent
    problems = missing_tools(("debootstrap", "mkfs.ext4", "ssh-keygen"))
    if problems:
        raise LabError(problems[0])
    if os.geteuid() != 0:
        raise LabError("building a VM image needs root (debootstrap, chroot)")
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / f".build-{name}-{key}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    b = _Builder(recipe, work, say)
    if source is not None:
        b.total += 1
    root = b.root
    started = time.monotonic()
    say(f"image {name}: building {final.name} in {work}")
    try:
        b.step(
            "debootstrap",
            lambda log: b.sh(["debootstrap", "--variant=minbase", recipe.suite, str(root), recipe.mirror], log),
        )
        _mount(root)
        try:
            b.step("install packages", lambda log: _install(b, log))
            if source is not None:
                b.step("build jool from source", lambda log: _build_jool(b, source, log))
            b.step("check kernel modules", lambda log: _check_modules(b, log))
            b.step("configure", lambda log: _configure(b, log))
        finally:
            _umount(root)
        b.step("keys", lambda log: _keys(b, log))
        b.step("copy kernel", lambda log: _copy_kernel(b, log))
        b.step(
            "mkfs.ext4",
            lambda log: b.sh(
                ["mkfs.ext4", "-q", "-F", "-L", "natbench", "-d", str(root), str(work / "disk.img"), recipe.size], log
            ),
        )
        manifest: dict[str, object] = {
            "name": name,
            "key": key,
            "suite": recipe.suite,
            "packages": list(recipe.packages),
            "kernel": b.kernel_version,
            "modules": b.module_versions,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - started, 1),
            "steps": {s.name: round(s.seconds, 1) for s in b.steps},
            "sizes": {f: (work / f).stat().st_size for f in _IMAGE_FILES},
        }
        if source is not None:
            manifest["source"] = source.as_dict()
            manifest["jool_version"] = b.jool_version
        shutil.rmtree(root)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
    except BaseException:
        _umount(root)
        shutil.rmtree(work, ignore_errors=True)
        raise
    say(f"image {name}: built in {time.monotonic() - started:.0f} s at {final}")
    image = _complete(name, key, final)
    if image is None:  # pragma: no cover - just written
        raise LabError(f"image {name}: the build at {final} does not check out")
    return image


def _mount(root: Path) -> None:
    for target, args in zip(
        _mounted(root),
        (["-t", "proc", "proc"], ["-t", "sysfs", "sysfs"], ["--bind", "/dev"]),
        strict=True,
    ):
        subprocess.run(["mount", *args, str(target)], check=True, capture_output=True)


def _umount(root: Path) -> None:
    for target in reversed(_mounted(root)):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def _install(b: _Builder, log: Path) -> None:
    policy = b.root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")  # no service starts inside the chroot
    policy.chmod(0o755)
    (b.root / "etc/apt/sources.list").write_text(
        f"deb {b.recipe.mirror} {b.recipe.suite} main\n"
        f"deb {b.recipe.mirror} {b.recipe.suite}-updates main\n"
        f"deb http://deb.debian.org/debian-security {b.recipe.suite}-security main\n"
    )
    pkgs = " ".join(b.recipe.packages)
    b.chroot(f"apt-get update -q\napt-get install -y -q --no-install-recommends {pkgs}", log)
    policy.unlink()


def _build_jool(b: _Builder, source: JoolSource, log: Path) -> None:
    """Compile and install Jool from ``source`` in the chroot (modules by DKMS for the image's kernel)."""
    b.kernel_version = _kernel_version(b.root)
    version = install_source(source, b.root)
    b.chroot(build_script(version, b.kernel_version, jobs=os.cpu_count() or 1), log)
    out = subprocess.run(["chroot", str(b.root), "jool_mapt", "--version"], capture_output=True, text=True)
    b.jool_version = out.stdout.strip()
    if out.returncode != 0 or not b.jool_version:
        raise LabError(f"jool_mapt --version failed after the build: {out.stderr.strip() or out.stdout.strip()}")


def _kernel_version(root: Path) -> str:
    versions = sorted(p.name for p in (root / "lib/modules").iterdir() if (p / "modules.dep").exists())
    if not versions:
        raise LabError("no kernel installed in the image (/lib/modules is empty)")
    return versions[-1]


def _check_modules(b: _Builder, log: Path) -> None:
    b.kernel_version = _kernel_version(b.root)
    b.module_versions = {}
    for module in b.recipe.modules:
        b.chroot(f"modinfo -k {b.kernel_version} {module}", log)
        out = subprocess.run(
            ["chroot", str(b.root), "modinfo", "-k", b.kernel_version, "-F", "version", module],
            capture_output=True,
            text=True,
        )
        b.module_versions[module] = out.stdout.strip()


def _configure(b: _Builder, log: Path) -> None:
    for path, content in b.recipe.files.items():
        target = b.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    b.chroot("\n".join(b.recipe.commands), log)


def _keys(b: _Builder, log: Path) -> None:
    ssh = b.root / "etc/ssh"
    host_key = ssh / "ssh_host_ed25519_key"
    for key in (host_key, b.work / "id_ed25519"):
        key.unlink(missing_ok=True)
        b.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"natbench-{b.recipe.name}", "-f", str(key)], log)
    shutil.copy(host_key.with_suffix(".pub"), b.work / "ssh_host_ed25519_key.pub")
    auth = b.root / "root/.ssh"
    auth.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copy(b.work / "id_ed25519.pub", auth / "authorized_keys")
    (auth / "authorized_keys").chmod(0o600)


def _copy_kernel(b: _Builder, log: Path) -> None:
    boot = b.root / "boot"
    shutil.copy(boot / f"vmlinuz-{b.kernel_version}", b.work / "vmlinuz")
    shutil.copy(boot / f"initrd.img-{b.kernel_version}", b.work / "initrd.img")
    log.write_text(f"kernel {b.kernel_version}\n")
