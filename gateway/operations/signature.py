"""`taking(Model, ...)`: a tool function whose signature is made from an argument model, so the SDK builds the
tool's input schema and argument checks from the one declaration (the function receives the fields as keyword
arguments, already checked; `Model.model_construct(**fields)` gives them back as the model)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field

F = TypeVar("F", bound=Callable[..., Any])


def parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """The model's fields as keyword-only parameters, each with its default and its description."""
    made = []
    for name, info in model.model_fields.items():
        annotation: Any = info.annotation
        if info.description:
            annotation = Annotated[annotation, Field(description=info.description)]
        default = inspect.Parameter.empty if info.is_required() else info.default
        made.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return made


def taking(model: type[BaseModel], *extra: inspect.Parameter) -> Callable[[F], F]:
    """Give the decorated tool function the signature `model`'s fields make, then `extra` parameters (view options
    that are not part of the engine request); its return annotation is kept."""

    def decorate(function: F) -> F:
        returns = inspect.signature(function, eval_str=True).return_annotation
        fields = parameters(model)
        # view options before a trailing request_id, where every tool has its request_id
        last = [p for p in fields if p.name == "request_id"]
        ordered = [*(p for p in fields if p.name != "request_id"), *extra, *last]
        function.__signature__ = inspect.Signature(ordered, return_annotation=returns)  # type: ignore[attr-defined]
        return function

    return decorate


def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    """An `extra` parameter of `taking`."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
