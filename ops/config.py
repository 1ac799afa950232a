"""`Settings`: the gateway's whole configuration, read from `HINDSIGHT_*` environment variables (and `.env`), its
secrets also from files (`HINDSIGHT_<NAME>_FILE`, `HINDSIGHT_SECRETS_DIR`: `Settings.settings_customise_sources`).

The settings are grouped by concern (`ops.settings`: `settings.serving`, `settings.backends`, `settings.models`,
`settings.limits`, `settings.rate_limits`, `settings.maintenance`, `settings.auth`, `settings.observability`), the
recall weights are the engine's own `ScoringWeights` (`settings.weights`), and every variable keeps its flat name:
`HINDSIGHT_REDIS_URL` is `settings.backends.redis_url`, `HINDSIGHT_WEIGHT_SIMILARITY` is
`settings.weights.similarity`. The sources read the flat names (`ops.settings.sources`) and `Settings` routes them
into their groups before validating (`nest`); so does a keyword argument: `Settings(redis_url=...)` is
`Settings(backends={"redis_url": ...})`. `SETTING_FIELDS` lists every setting by its flat name.

Nothing here runs at import time: `Settings()` reads the environment and the files when it is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from memory.errors import InvalidArgument
from memory.recall.scoring import ScoringWeights
from ops.settings.auth import AuthSettings
from ops.settings.backends import BackendSettings
from ops.settings.base import SettingsGroup, secret_file_was_read
from ops.settings.limits import LimitSettings
from ops.settings.maintenance import MaintenanceSettings
from ops.settings.models import ModelSettings
from ops.settings.observability import ObservabilitySettings
from ops.settings.rate_limits import RateLimitSettings, TenantLimits
from ops.settings.serving import PROTECTED_RESOURCE_PATH, ServingSettings
from ops.settings.sources import (
    SECRET_FILE_SETTINGS,
    SecretFileSettingsSource,
    SecretsDirSettingsSource,
    init_argument,
    reading_variables,
    variables_class,
    variables_read,
)
from ops.settings.weights import CONFIGURED, WEIGHT_FIELDS, WEIGHT_SETTINGS, ScoringOverrides

__all__ = [
    "PROTECTED_RESOURCE_PATH",
    "SECRET_FILE_SETTINGS",
    "SETTING_FIELDS",
    "ScoringOverrides",
    "Settings",
    "TenantLimits",
    "UntrustedPolicy",
]

# what recall does with a memory whose text reads as instructions to its reader (`memory.pipeline.injection`)
UntrustedPolicy = Literal["mark", "withhold_others", "withhold_context"]

GROUPS: dict[str, type[SettingsGroup]] = {
    "serving": ServingSettings,
    "backends": BackendSettings,
    "models": ModelSettings,
    "limits": LimitSettings,
    "rate_limits": RateLimitSettings,
    "maintenance": MaintenanceSettings,
    "auth": AuthSettings,
    "observability": ObservabilitySettings,
}


class Settings(BaseSettings):
    # env_ignore_empty: `HINDSIGHT_X=` (in the environment or in .env, as `cp .env.example .env` leaves it) means
    # unset, so the field keeps its default instead of failing to parse or overriding a generated value.
    # Empty values are unset (a copied .env.example never overrides a default); errors never echo the input, which
    # may hold secrets.
    model_config = SettingsConfigDict(
        env_prefix="HINDSIGHT_", env_file=".env", extra="ignore", env_ignore_empty=True, hide_input_in_errors=True
    )

    serving: ServingSettings = Field(default_factory=ServingSettings)
    backends: BackendSettings = Field(default_factory=BackendSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    rate_limits: RateLimitSettings = Field(default_factory=RateLimitSettings)
    maintenance: MaintenanceSettings = Field(default_factory=MaintenanceSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    # recall scoring: score = similarity·relevance + recency + importance + access frequency (docs/DESIGN.md §
    # "Recall"), the engine's weights as declared in memory.recall.scoring, each from HINDSIGHT_WEIGHT_<FIELD>
    # (HINDSIGHT_RECENCY_DECAY_PER_HOUR); a share not set is the one calibrated for the embedder
    # (gateway.services.runtime.scoring_weights, `weights_set`)
    weights: ScoringWeights = Field(default_factory=ScoringWeights)
    scoring_tenants: dict[str, ScoringOverrides] = Field(
        default_factory=dict, description='Per-tenant recall weights, JSON: {"acme": {"recency": 0.3}}'
    )
    untrusted_memories: UntrustedPolicy = Field(
        "mark",
        description="Memories whose text reads as instructions to the model reading it (stored as told, marked "
        "untrusted): mark (shown, flagged), withhold_others (not recalled for another writer's token), "
        "withhold_context (not in format: context blocks). Withheld ones are counted in the answer.",
    )
    untrusted_tenants: dict[str, UntrustedPolicy] = Field(
        default_factory=dict, description='Per-tenant untrusted_memories, JSON: {"acme": "withhold_others"}'
    )

    # secrets from files, read before the environment (settings_customise_sources)
    secrets_dir: Path | None = Field(
        None,
        description="Directory of secret files named like the variables (HINDSIGHT_JWT_SECRET, HINDSIGHT_REDIS_URL, "
        "...; any case), e.g. a mounted Kubernetes Secret: a file wins over the variable. Set in the environment "
        "or .env (not in a file). HINDSIGHT_<NAME>_FILE names the file of one secret instead.",
    )

    _weights_set: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Where each setting comes from, the first that has it winning (`source_order`): the arguments;
        `HINDSIGHT_<NAME>_FILE` (for `SECRET_FILE_SETTINGS`); the files of `HINDSIGHT_SECRETS_DIR` (pydantic-settings'
        secrets source, as `secrets_dir` would configure it); the environment; `.env`. All but the arguments read
        the flat names of the settings (`ops.settings.sources`).

        Files come before the environment, unlike pydantic-settings' default order, so that a mounted secret wins
        over a plain variable of the same name (the chart's ConfigMap sets a Redis URL, its Secret may hold the
        one with the password). Both `_FILE` variables and the directory are read from the environment (then
        `.env`) when `Settings()` is called."""
        env, dotenv = reading_variables(env_settings, VARIABLES), reading_variables(dotenv_settings, VARIABLES)
        variables = {**variables_read(dotenv), **variables_read(env)}
        directory = init_argument(init_settings, "secrets_dir") or variables.get("hindsight_secrets_dir")
        files: list[PydanticBaseSettingsSource] = [SecretFileSettingsSource(VARIABLES, variables)]
        if directory and Path(directory).is_dir():  # else the secrets_dir field's validator reports it
            files.append(SecretsDirSettingsSource(VARIABLES, secrets_dir=Path(directory)))
        files.append(reading_variables(file_secret_settings, VARIABLES))
        return cls.source_order(init_settings, tuple(files), env, dotenv)

    @classmethod
    def source_order(
        cls,
        init: PydanticBaseSettingsSource,
        files: tuple[PydanticBaseSettingsSource, ...],
        env: PydanticBaseSettingsSource,
        dotenv: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The sources in their order of precedence (a subclass may reorder them): arguments, files, environment,
        `.env`."""
        return init, *files, env, dotenv

    @model_validator(mode="wrap")
    @classmethod
    def _nested(cls, data: Any, handler: ModelWrapValidatorHandler[Settings]) -> Settings:
        """The flat names routed into their groups (`nest`), and which weights were given (`weights_set`)."""
        if isinstance(data, Mapping):
            data = nest(data)
            given = data.get("weights")
            weights_set = (
                frozenset(given) if isinstance(given, Mapping) else frozenset(() if given is None else CONFIGURED)
            )
        settings = handler(data)
        if isinstance(data, Mapping):
            settings._weights_set = weights_set
        return settings

    _secret_file_was_read = field_validator("*", mode="before")(secret_file_was_read)

    @field_validator("weights", mode="wrap")
    @classmethod
    def _weights_hold(cls, value: object, handler: ValidatorFunctionWrapHandler) -> ScoringWeights:
        """What the engine refuses beyond the declared bounds (all four score weights 0, an infinite weight) is an
        invalid setting too."""
        try:
            weights: ScoringWeights = handler(value)
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None
        return weights

    @field_validator("secrets_dir")
    @classmethod
    def _secrets_dir_is_a_directory(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_dir():
            raise ValueError(f"HINDSIGHT_SECRETS_DIR={value} is not a directory")
        return value

    @property
    def weights_set(self) -> frozenset[str]:
        """The `ScoringWeights` fields set explicitly (a variable, an argument): the shares that are not are
        calibrated for the embedder (`gateway.services.runtime.scoring_weights`)."""
        return self._weights_set

    @property
    def mcp_url(self) -> str:
        return self.serving.mcp_url

    @property
    def resource_metadata_url(self) -> str:
        """Where the RFC 9728 protected-resource metadata of `/mcp` is served (named in `WWW-Authenticate`)."""
        return self.serving.resource_metadata_url

    def replaced(self, **values: Any) -> Settings:
        """A copy with the settings named (by their flat names, as `Settings(...)` takes them) changed, unvalidated
        as `model_copy(update=...)`."""
        update: dict[str, Any] = {}
        for group, changed in nest(values).items():
            current = getattr(self, group)
            if isinstance(current, BaseModel):
                update[group] = current.model_copy(update=changed)
            elif isinstance(current, ScoringWeights):
                update[group] = replace(current, **changed)
            else:
                update[group] = changed
        copied = self.model_copy(update=update)
        if "weights" in update:  # the weights named are set explicitly (not calibrated for the embedder)
            copied._weights_set = self._weights_set | set(nest(values).get("weights", {}))
        return copied


def _top_level() -> dict[str, FieldInfo]:
    return {name: info for name, info in Settings.model_fields.items() if name not in GROUPS and name != "weights"}


# every setting by its flat name (its variable's, less HINDSIGHT_): (the Settings attribute holding it or None for
# a setting of its own, its field's name there)
_PLACES: dict[str, tuple[str | None, str]] = {
    **{name: (group, name) for group, model in GROUPS.items() for name in model.model_fields},
    **{setting: ("weights", name) for name, setting in WEIGHT_SETTINGS.items()},
    **{name: (None, name) for name in _top_level()},
}
# every setting by its flat name: its field (type, bounds, default, description)
SETTING_FIELDS: dict[str, FieldInfo] = {
    **{name: info for model in GROUPS.values() for name, info in model.model_fields.items()},
    **WEIGHT_FIELDS,
    **_top_level(),
}
VARIABLES = variables_class(SETTING_FIELDS, Settings.model_config)  # what the sources read (ops.settings.sources)


def nest(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with each setting given by its flat name moved into its group (`redis_url` into `backends`,
    `weight_similarity` into `weights` as `similarity`); a group given whole keeps what it sets over the flat
    names."""
    nested: dict[str, Any] = {}
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        group, name = _PLACES.get(key, (None, key))
        if group is None:
            nested[key] = value
        else:
            grouped.setdefault(group, {})[name] = value
    for group, values in grouped.items():
        given = nested.get(group)
        nested[group] = values if given is None else values | _given(given)
    return nested


def setting_at(loc: tuple[int | str, ...]) -> str:
    """The flat name of the setting a validation error's location points into (`("backends", "redis_url")`:
    `redis_url`; `("weights", "similarity")`: `weight_similarity`), then the rest of the location, `.`-joined."""
    parts = [str(part) for part in loc]
    if parts == ["weights"]:  # the weights together (all four score weights 0)
        return "weight_*"
    if len(parts) > 1 and parts[0] == "weights":
        parts = [WEIGHT_SETTINGS.get(parts[1], parts[1]), *parts[2:]]
    elif len(parts) > 1 and parts[0] in GROUPS:
        parts = parts[1:]
    return ".".join(parts)


def _given(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    if isinstance(value, ScoringWeights):
        return asdict(value)
    return value
