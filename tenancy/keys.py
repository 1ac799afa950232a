"""The development HS256 secret: `load_or_create_dev_secret` reads or creates `<data_dir>/jwt-secret` (the server),
`load_dev_secret` only reads it (`hindsight token`, which must sign with the server's secret, never a new one).

Only for dev and single-node installs; production deployments configure their own secret or public keys.
The secret file is created with mode 0600 from the first byte on: the secret is written to a private temporary
file (opened with O_CREAT|O_EXCL, mode 0600) and then hard-linked into place, so no reader can ever observe a
missing-permission window or a half-written file, and two processes starting at once agree on one secret.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

SECRET_FILENAME = "jwt-secret"
_SECRET_BYTES = 32  # 256 bits
_MIN_SECRET_CHARS = 32


def load_or_create_dev_secret(data_dir: Path) -> str:
    """Return the secret stored in `data_dir/jwt-secret`, creating the directory and the file on first run.

    The new secret is 256 random bits, url-safe base64 encoded (43 characters). If another process creates the
    file concurrently, its secret wins and is returned here as well.
    """
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = data_dir / SECRET_FILENAME
    if not path.exists():
        _create(path, secrets.token_urlsafe(_SECRET_BYTES))
    return _read(path)


def load_dev_secret(data_dir: Path) -> str | None:
    """The secret stored in `data_dir/jwt-secret`, or None when there is no such file. Creates nothing."""
    try:
        return _read(data_dir / SECRET_FILENAME)
    except FileNotFoundError:
        return None


def _create(path: Path, secret: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    try:
        _write_exclusive(tmp, secret)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won the race: its secret is the one
        except OSError:
            # Filesystems without hard links: create the target exclusively instead (a concurrent reader
            # may then see a short window with an empty file, which `_read` reports instead of using).
            with contextlib.suppress(FileExistsError):
                _write_exclusive(path, secret)
    finally:
        tmp.unlink(missing_ok=True)


def _write_exclusive(path: Path, secret: str) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secret + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _read(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        logger.warning("JWT secret file %s is accessible to other users (mode %o); chmod 600 it", path, mode)
    secret = path.read_text(encoding="utf-8").strip()
    if len(secret) < _MIN_SECRET_CHARS:
        raise ValueError(
            f"JWT secret file {path} is empty or shorter than {_MIN_SECRET_CHARS} characters; "
            "delete it to generate a new one"
        )
    return secret
