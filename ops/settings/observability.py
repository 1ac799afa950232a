"""`ObservabilitySettings`: the log level, tracing (the standard `OTEL_*` variables, read under their own names,
and the old `HINDSIGHT_OTEL_ENABLED` switch), metrics, the admin debug views and the opt-in recall log."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from ops.settings.base import SettingsGroup


class ObservabilitySettings(SettingsGroup):
    """Logs, traces, metrics and the recall log (`HINDSIGHT_LOG_LEVEL`, `OTEL_TRACES_EXPORTER`,
    `HINDSIGHT_RECALL_LOG_TENANTS`, ...)."""

    log_level: Literal["debug", "info", "warning", "error"] = "info"
    otel_enabled: bool | None = Field(
        None,
        description="Old switch, kept as an alias below OTEL_TRACES_EXPORTER: true exports over OTLP; false keeps an "
        "OTLP endpoint alone from turning tracing on (as before the standard variables).",
    )
    # tracing by the standard OpenTelemetry variables, read under their own names (no HINDSIGHT_ prefix); an empty
    # value is unset. The OTLP exporter and the SDK read the rest themselves when the app is built (headers,
    # timeout, TLS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER): see ops/telemetry.py
    otel_sdk_disabled: bool = Field(
        False, validation_alias="otel_sdk_disabled", description="OTEL_SDK_DISABLED=true: no tracing at all."
    )
    otel_traces_exporter: str = Field(
        "",
        validation_alias="otel_traces_exporter",
        description="OTEL_TRACES_EXPORTER: otlp, console or none, or a comma list. Unset: HINDSIGHT_OTEL_ENABLED "
        "decides if set, else otlp when an OTLP endpoint is set, else none.",
    )
    otel_exporter_otlp_endpoint: str = Field(
        "",
        validation_alias="otel_exporter_otlp_endpoint",
        description="OTEL_EXPORTER_OTLP_ENDPOINT: the collector's OTLP/HTTP base URL; traces go to <url>/v1/traces.",
    )
    otel_exporter_otlp_traces_endpoint: str = Field(
        "",
        validation_alias="otel_exporter_otlp_traces_endpoint",
        description="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full URL traces are posted to (wins over the base).",
    )
    otel_exporter_otlp_protocol: str = Field(
        "",
        validation_alias="otel_exporter_otlp_protocol",
        description="OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default and the only one shipped).",
    )
    otel_exporter_otlp_traces_protocol: str = Field(
        "",
        validation_alias="otel_exporter_otlp_traces_protocol",
        validate_default=True,  # its validator checks the protocol of both variables, set or not
        description="OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: as OTEL_EXPORTER_OTLP_PROTOCOL, for traces (wins).",
    )
    metrics_tenant_label: bool = Field(False, description="Add a tenant label to tool metrics (cardinality!).")
    metrics_sample_seconds: float = Field(60.0, gt=0, description="How often the memory-count gauge is sampled.")
    debug_views_enabled: bool = Field(False, description="Serve /debug/memories and /debug/stats to admin tokens.")
    recall_log_tenants: list[str] = Field(
        default_factory=list,
        description="Tenants whose recalls are logged (query, filters, returned ids and score parts) for their "
        "admins (the recall_log tool, /debug/sessions). Empty: no recall is logged.",
    )
    recall_log_max_entries: int = Field(1000, ge=1, description="Recall-log entries kept per tenant (newest).")
    recall_log_max_age_seconds: float = Field(
        7 * 86_400, gt=0, description="Recall-log entries older than this are dropped."
    )

    @field_validator("otel_sdk_disabled", mode="before")
    @classmethod
    def _otel_boolean(cls, value: object) -> object:
        """The OTel rule for a boolean variable: only "true" (any case) is true; empty or anything else is false."""
        return value.strip().lower() == "true" if isinstance(value, str) else value

    @field_validator("otel_enabled", mode="before")
    @classmethod
    def _otel_switch_empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator(
        "otel_traces_exporter",
        "otel_exporter_otlp_endpoint",
        "otel_exporter_otlp_traces_endpoint",
        "otel_exporter_otlp_protocol",
        "otel_exporter_otlp_traces_protocol",
    )
    @classmethod
    def _otel_text(cls, value: str) -> str:
        return value.strip()

    @field_validator("otel_traces_exporter")
    @classmethod
    def _otel_exporters_available(cls, value: str) -> str:
        names = _otel_exporter_names(value)
        if "none" in names and len(set(names)) > 1:
            raise ValueError(f"OTEL_TRACES_EXPORTER={value}: 'none' cannot be combined with an exporter")
        unknown = sorted(set(names) - {"none", *OTEL_EXPORTERS})
        if unknown:
            raise ValueError(
                f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} is not available here; use otlp (OTLP over HTTP), "
                "console or none"
            )
        return value

    @field_validator("otel_exporter_otlp_traces_protocol")
    @classmethod
    def _otel_protocol_available(cls, value: str, info: ValidationInfo) -> str:
        """Checked on the last OTel field, the others known by then (and a startup error, not a silent no-op):
        only the OTLP/HTTP exporter is installed. Field-level, so the error never quotes other settings."""
        protocol = value or info.data.get("otel_exporter_otlp_protocol") or "http/protobuf"
        if protocol != "http/protobuf" and "otlp" in _otel_traces_exporters(info.data):
            raise ValueError(
                f"OTLP protocol {protocol!r} (OTEL_EXPORTER_OTLP_PROTOCOL / OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) is not "
                "available: this gateway ships the OTLP/HTTP exporter only; set http/protobuf and point "
                "OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318)"
            )
        return value

    def otel_traces_exporters(self) -> tuple[str, ...]:
        """The span exporters to run ("otlp", "console"); none when tracing is off. First that applies:

        1. OTEL_SDK_DISABLED=true: off.
        2. OTEL_TRACES_EXPORTER: the exporters it names (none: off).
        3. HINDSIGHT_OTEL_ENABLED (the old switch): true, otlp; false, off.
        4. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT: otlp.
        5. Off: the spec's default exporter (otlp) would post to a localhost:4318 that an embedded gateway lacks.
        """
        return _otel_traces_exporters(self.model_dump(include=OTEL_DECISION_FIELDS))


OTEL_EXPORTERS = ("otlp", "console")  # the span exporters installed (OTLP over HTTP only)
OTEL_DECISION_FIELDS = {
    "otel_sdk_disabled",
    "otel_enabled",
    "otel_traces_exporter",
    "otel_exporter_otlp_endpoint",
    "otel_exporter_otlp_traces_endpoint",
}


def _otel_exporter_names(value: str) -> list[str]:
    return [name.strip().lower() for name in value.split(",") if name.strip()]


def _otel_traces_exporters(values: dict[str, Any]) -> tuple[str, ...]:
    """`Settings.otel_traces_exporters` from the validated values of `OTEL_DECISION_FIELDS`."""
    if values.get("otel_sdk_disabled"):
        return ()
    names = _otel_exporter_names(values.get("otel_traces_exporter") or "")
    if not names:
        switch = values.get("otel_enabled")
        endpoint = values.get("otel_exporter_otlp_traces_endpoint") or values.get("otel_exporter_otlp_endpoint")
        names = ["otlp"] if switch or (switch is None and endpoint) else []
    return tuple(dict.fromkeys(name for name in names if name in OTEL_EXPORTERS))
