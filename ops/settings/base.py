"""`SettingsGroup`, the base of each group of settings, and `UnreadableSecretFile`, what a secret file that
cannot be read gives its setting (an error of that setting once validated)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator


class UnreadableSecretFile:
    """What the file sources give a setting whose file cannot be read (or, for a `_FILE`, is empty): a validator
    turns it into a validation error of that setting (`Settings()` raises `ValidationError`, as for any invalid
    value, and the message names the variable and the file, never a content)."""

    def __init__(self, message: str) -> None:
        self.message = message


def secret_file_was_read(cls: type[BaseModel], value: object) -> object:
    """Every field's check, of a group or of the whole settings: a secret file that could not be read is an invalid
    setting, named without its content."""
    if isinstance(value, UnreadableSecretFile):
        raise ValueError(value.message)
    return value


class SettingsGroup(BaseModel):
    """One concern's settings. Each field is read from `HINDSIGHT_<FIELD>` (the group's name is not part of the
    variable's); errors never echo the input, which may hold secrets; unknown names are refused (a nested value
    given in code names real fields)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    _secret_file_was_read = field_validator("*", mode="before")(secret_file_was_read)
