"""The recall weights as settings. The weights themselves are the engine's `memory.recall.scoring.ScoringWeights`,
whose fields, defaults, bounds and descriptions are declared there once: `Settings.weights` holds one as it is,
and this module only derives what configuration needs from that declaration: each weight's variable name
(`HINDSIGHT_WEIGHT_<FIELD>`, and `HINDSIGHT_RECENCY_DECAY_PER_HOUR`), its field as a setting (the flat view the
sources read, `ops.settings.sources`), and `ScoringOverrides`, a tenant's partial weights held to the same bounds.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, Optional, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

from memory.recall.scoring import ScoringWeights

# ScoringWeights fields the engine keeps to itself (constants of its formulas, no setting)
ENGINE_CONSTANTS = ("access_saturation", "answer_lift")
UNPREFIXED = ("recency_decay_per_hour",)  # read as HINDSIGHT_RECENCY_DECAY_PER_HOUR (no WEIGHT_)

_DECLARED: dict[str, Any] = get_type_hints(ScoringWeights, include_extras=True)  # each field's Annotated type
CONFIGURED = tuple(item.name for item in fields(ScoringWeights) if item.name not in ENGINE_CONSTANTS)
# ScoringWeights field -> its setting's name (the variable's, less HINDSIGHT_)
WEIGHT_SETTINGS: dict[str, str] = {name: name if name in UNPREFIXED else f"weight_{name}" for name in CONFIGURED}


def _defaults() -> dict[str, Any]:
    return {item.name: item.default for item in fields(ScoringWeights) if item.default is not MISSING}


_AS_FIELDS: dict[str, Any] = {name: (_DECLARED[name], _defaults()[name]) for name in CONFIGURED}
_AsModel = create_model("ScoringWeightsFields", **_AS_FIELDS)  # the declaration as a model, for its FieldInfos
# setting name -> the weight's field (type, bounds, description, the engine's default)
WEIGHT_FIELDS: dict[str, FieldInfo] = {WEIGHT_SETTINGS[name]: _AsModel.model_fields[name] for name in CONFIGURED}

_PARTIAL_FIELDS: dict[str, Any] = {name: (Optional[_DECLARED[name]], None) for name in CONFIGURED}  # noqa: UP045
_Partial: type[BaseModel] = create_model("ScoringOverridesFields", **_PARTIAL_FIELDS)  # each field optional


class ScoringOverrides(_Partial):
    """One tenant's recall weights where they differ from the defaults: any subset of `ScoringWeights`' fields
    (but `ENGINE_CONSTANTS`), each held to the bounds declared there; an unknown name is refused."""

    model_config = ConfigDict(extra="forbid")
