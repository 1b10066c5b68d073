"""Jool built from source inside an image's chroot: kernel modules with DKMS, userspace with autotools.

:func:`install_source` copies a checked source tree (:mod:`~natbench.testbed.lab.jool_source`) to
``/usr/src/jool-<dkms version>`` of the root file system, where DKMS expects it; :func:`build_script`
is the shell script the image build runs in the chroot: ``dkms add``, ``build`` and ``install`` for
the image's kernel (the tree's own ``dkms.conf`` builds ``jool_common``, ``jool``, ``jool_siit`` and
``jool_mapt`` against that kernel's headers), then ``autogen.sh``, ``configure``, ``make`` and
``make install`` of the userspace tools (``jool``, ``jool_siit``, ``jool_mapt``, ``joold``, the
iptables plugin) in a scratch copy that is removed afterwards.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from natbench.testbed.lab.jool_source import JoolSource, dkms_version

JOOL_MODULES = ("jool_common", "jool", "jool_siit", "jool_mapt")
"""The kernel modules a Jool 4.2 source build must leave for the image's kernel."""


def install_source(source: JoolSource, root: Path) -> str:
    """Copy ``source`` to ``<root>/usr/src/jool-<version>``; returns the DKMS version (``4.1.255``)."""
    version = dkms_version(source.tree)
    dest = root / "usr/src" / f"jool-{version}"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source.tree, dest, symlinks=True)
    return version


def build_script(version: str, kernel: str, jobs: int = 2) -> str:
    """The chroot shell script that builds and installs Jool ``version`` (from ``/usr/src``) for ``kernel``."""
    v, k = shlex.quote(version), shlex.quote(kernel)
    src = shlex.quote(f"/usr/src/jool-{version}")
    return "\n".join(
        [
            f"dkms add -m jool -v {v}",
            f"dkms build -m jool -v {v} -k {k}",
            f"dkms install -m jool -v {v} -k {k}",
            "rm -rf /root/jool-usr",
            f"cp -a {src} /root/jool-usr",
            "cd /root/jool-usr",
            "./autogen.sh",
            "./configure --prefix=/usr --with-bash-completion-dir=no",
            f"make -j{int(jobs)}",
            "make install",
            "ldconfig",
            "cd /",
            "rm -rf /root/jool-usr",
            "jool_mapt --version",
        ]
    )
