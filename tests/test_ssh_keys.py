"""Key files the SSH executor cannot use are one authentication error naming the file, before any connection."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from natbench.duts.executors import AuthenticationFailed
from natbench.duts.ssh import SshExecutor


@pytest.fixture
def dsa_key(tmp_path: Path) -> Path:
    """A DSA private key (OpenSSH format) made by ssh-keygen: a key type paramiko 5 no longer loads."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen (openssh-client) is not installed")
    key = tmp_path / "id_dsa"
    made = subprocess.run(
        ["ssh-keygen", "-q", "-t", "dsa", "-N", "", "-f", str(key)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"this ssh-keygen cannot make DSA keys: {made.stderr.strip()}")
    return key


def executor(tmp_path: Path, key: Path, passphrase: str | None = None) -> SshExecutor:
    known = tmp_path / "known_hosts"
    known.write_text("")
    # port 9 (discard) on localhost: nothing is contacted, the key is loaded before any connection
    return SshExecutor("127.0.0.1", user="root", port=9, key=str(key), known_hosts=str(known), passphrase=passphrase)


@pytest.mark.parametrize("passphrase", [None, "a passphrase for a key that has none"])
def test_a_dsa_key_is_one_authentication_error_naming_the_file_not_a_traceback(
    tmp_path: Path, dsa_key: Path, passphrase: str | None
) -> None:
    ex = executor(tmp_path, dsa_key, passphrase)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cryptography package's deprecation warning for DSA keys
        with pytest.raises(AuthenticationFailed) as err:
            ex.connect()
    msg = str(err.value)
    assert f"cannot load key {dsa_key}: a key type paramiko does not support" in msg
    assert "\n" not in msg
    body = dsa_key.read_text().splitlines()[1]  # the first line of base64 key material
    assert body not in msg and "BEGIN" not in msg  # the key's content is never shown


def test_a_file_with_an_unknown_key_header_is_one_authentication_error(tmp_path: Path) -> None:
    key = tmp_path / "id_odd"
    key.write_text("-----BEGIN SOMETHING ELSE-----\nc2VjcmV0IG1hdGVyaWFs\n-----END SOMETHING ELSE-----\n")
    with pytest.raises(AuthenticationFailed) as err:
        executor(tmp_path, key).connect()
    msg = str(err.value)
    assert str(key) in msg and "\n" not in msg
    assert "c2VjcmV0IG1hdGVyaWFs" not in msg
