"""Where the settings are read from. pydantic-settings' sources look each setting up by a field of the class they
are given; the settings are nested by concern (`ops.config.Settings`), but their variables keep their flat names
(`HINDSIGHT_REDIS_URL`, not `HINDSIGHT_BACKENDS__REDIS_URL`). So every source but the arguments reads against
`variables_class`, a class with one field per setting under its flat name (never instantiated), and gives the flat
values that `Settings` routes into their groups before validating them.

Beside pydantic-settings' environment, `.env` and secrets-directory sources: `HINDSIGHT_<NAME>_FILE` for the
secrets (`SecretFileSettingsSource`), and a secrets directory that takes an empty file as unset
(`SecretsDirSettingsSource`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import create_model
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SecretsSettingsSource,
    SettingsConfigDict,
)

from ops.settings.base import UnreadableSecretFile

# The settings that hold a secret, each also read from the file that `HINDSIGHT_<NAME>_FILE` names: every SecretStr
# field, and the Redis URL (it carries the password). tests/ops/test_config.py checks that no SecretStr is missing.
SECRET_FILE_SETTINGS = ("jwt_secret", "redis_url", "qdrant_api_key", "llm_api_key", "embedder_api_key")


def variables_class(settings: Mapping[str, FieldInfo], config: SettingsConfigDict) -> type[BaseSettings]:
    """A settings class whose fields are `settings` (flat name -> field) and whose configuration (the prefix, ...)
    is `config`: what the sources look names up in."""
    fields: dict[str, Any] = {name: (info.annotation, copy.copy(info)) for name, info in settings.items()}
    base = type("HindsightVariablesBase", (BaseSettings,), {"model_config": config, "__module__": __name__})
    return create_model("HindsightVariables", __base__=base, **fields)


def reading_variables(source: PydanticBaseSettingsSource, variables: type[BaseSettings]) -> PydanticBaseSettingsSource:
    """`source` (as pydantic-settings built it for the nested class: its prefix, its `.env` file, its options)
    looking its settings up by their flat names instead. A source reads its variables when built; which names it
    looks for, and how it decodes them, only when called, from the class it holds."""
    flat = copy.copy(source)
    flat.settings_cls = variables
    return flat


class SecretFileSettingsSource(PydanticBaseSettingsSource):
    """`HINDSIGHT_<NAME>_FILE=<path>` for each of `SECRET_FILE_SETTINGS` (the Docker convention, as in
    `docker-compose.yml`'s secrets): the setting is the file's text, surrounding whitespace (its final newline)
    stripped. A file that cannot be read, or is empty, is an error of that setting, never a silent fallback."""

    def __init__(self, settings_cls: type[BaseSettings], variables: Mapping[str, str | None]) -> None:
        super().__init__(settings_cls)
        self._variables = variables  # lower-case names, empty values dropped (the settings are case-insensitive)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        variable = f"HINDSIGHT_{field_name.upper()}_FILE"
        path = self._variables.get(variable.lower()) if field_name in SECRET_FILE_SETTINGS else None
        if not path:
            return None, field_name, False
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            return UnreadableSecretFile(f"{variable}={path}: {exc.strerror or exc}"), field_name, False
        except UnicodeDecodeError:
            return UnreadableSecretFile(f"{variable}={path}: not UTF-8 text"), field_name, False
        if not text:
            return UnreadableSecretFile(f"{variable}={path}: the file is empty"), field_name, False
        return text, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in SECRET_FILE_SETTINGS:
            value, key, _ = self.get_field_value(self.settings_cls.model_fields[name], name)
            if value is not None:
                found[key] = value
        return found


class SecretsDirSettingsSource(SecretsSettingsSource):
    """pydantic-settings' secrets-directory source (files named `hindsight_<field>`, any case), with an empty file
    taken as unset, as an empty variable is (`env_ignore_empty`), and an unreadable one (e.g. a Kubernetes Secret
    volume without the pod's fsGroup) an error of its setting."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        try:
            value, key, is_complex = super().get_field_value(field, field_name)
        except OSError as exc:
            failed = f"HINDSIGHT_SECRETS_DIR={self.secrets_dir}: {exc.filename or field_name}: {exc.strerror or exc}"
            return UnreadableSecretFile(failed), field_name, False
        return (None if value == "" else value), key, is_complex

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        if isinstance(value, UnreadableSecretFile):  # not JSON to decode, even for a list or dict setting
            return value
        return super().prepare_field_value(field_name, field, value, value_is_complex)


def variables_read(source: PydanticBaseSettingsSource) -> dict[str, str]:
    """The variables an environment or dotenv source read (names in lower case), without the empty ones."""
    found = source.env_vars if isinstance(source, EnvSettingsSource) else {}
    return {name: value for name, value in found.items() if value}


def init_argument(source: PydanticBaseSettingsSource, name: str) -> Any:
    return source.init_kwargs.get(name) if isinstance(source, InitSettingsSource) else None
