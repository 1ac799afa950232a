"""load_or_create_dev_secret: a private, stable HS256 secret in the data directory."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tenancy import JwtSettings, load_or_create_dev_secret


def test_secret_is_created_with_mode_0600_in_a_new_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"

    secret = load_or_create_dev_secret(data_dir)

    path = data_dir / "jwt-secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == secret
    assert len(secret) >= 43
    assert sorted(p.name for p in data_dir.iterdir()) == ["jwt-secret"]  # no temporary files left


def test_secret_is_usable_for_hs256(tmp_path: Path) -> None:
    JwtSettings(secret=load_or_create_dev_secret(tmp_path))


def test_secret_is_reused_on_second_call(tmp_path: Path) -> None:
    assert load_or_create_dev_secret(tmp_path) == load_or_create_dev_secret(tmp_path)


def test_different_data_dirs_get_different_secrets(tmp_path: Path) -> None:
    assert load_or_create_dev_secret(tmp_path / "a") != load_or_create_dev_secret(tmp_path / "b")


def test_secret_created_by_another_process_is_read(tmp_path: Path) -> None:
    existing = "s" * 43
    (tmp_path / "jwt-secret").write_text(existing + "\n")
    assert load_or_create_dev_secret(tmp_path) == existing


def test_concurrent_first_runs_agree_on_one_secret(tmp_path: Path) -> None:
    data_dir = tmp_path / "race"
    with ThreadPoolExecutor(max_workers=8) as pool:
        secrets = set(pool.map(lambda _: load_or_create_dev_secret(data_dir), range(32)))
    assert len(secrets) == 1
    assert sorted(p.name for p in data_dir.iterdir()) == ["jwt-secret"]


def test_empty_secret_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "jwt-secret").write_text("\n")
    with pytest.raises(ValueError, match="delete it"):
        load_or_create_dev_secret(tmp_path)
