"""Tracing by the standard OpenTelemetry variables: which exporters the environment asks for (OTEL_SDK_DISABLED,
OTEL_TRACES_EXPORTER, the OTLP endpoints, the old HINDSIGHT_OTEL_ENABLED alias), the startup error for a protocol
that is not installed, and spans of real tool calls arriving at a real OTLP/HTTP receiver on a free port."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from pydantic import ValidationError

from gateway.web.app import create_app
from ops.config import Settings
from ops.telemetry import build_tracer_provider, otlp_traces_endpoint
from ops.version import VERSION
from tests.conftest import Mint, data, make_settings, mcp_session, running
from tests.http_stub import QuietHandler

# -- a real OTLP/HTTP receiver ----------------------------------------------------------------------------------


@dataclass
class Export:
    path: str
    headers: dict[str, str]
    request: ExportTraceServiceRequest

    def span_names(self) -> list[str]:
        return [s.name for rs in self.request.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def resources(self) -> list[dict[str, str]]:
        return [{kv.key: kv.value.string_value for kv in rs.resource.attributes} for rs in self.request.resource_spans]


class OtlpReceiver:
    """An OTLP/HTTP collector stand-in: decodes every protobuf POST as an `ExportTraceServiceRequest`."""

    def __init__(self) -> None:
        self.exports: list[Export] = []
        lock = threading.Lock()
        exports = self.exports

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    exports.append(
                        Export(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            ExportTraceServiceRequest.FromString(body),
                        )
                    )
                self.answer(200, "application/x-protobuf", ExportTraceServiceResponse().SerializeToString())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def span_names(self) -> list[str]:
        return [name for export in self.exports for name in export.span_names()]

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as started:
        yield started


@pytest.fixture(autouse=True)
def no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an environment without any OTel variable (the runner's own never leak in)."""
    for name in [n for n in os.environ if n.startswith("OTEL_") or n == "HINDSIGHT_OTEL_ENABLED"]:
        monkeypatch.delenv(name)


def settings_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> Settings:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return make_settings(tmp_path / "data")


# -- which exporters the variables ask for ----------------------------------------------------------------------

ExportersFor = Callable[..., tuple[str, ...]]


@pytest.fixture
def exporters_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ExportersFor:
    """The trace exporters that settings read with these variables set ask for."""
    return lambda **env: settings_with(monkeypatch, tmp_path, **env).observability.otel_traces_exporters()


def test_tracing_is_off_when_no_otel_variable_is_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = settings_with(monkeypatch, tmp_path)
    assert settings.observability.otel_traces_exporters() == ()
    assert build_tracer_provider(settings) is None


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_an_otlp_endpoint_alone_turns_otlp_tracing_on(exporters_for: ExportersFor, variable: str) -> None:
    assert exporters_for(**{variable: "http://collector:4318"}) == ("otlp",)


@pytest.mark.parametrize(
    ("value", "named"),
    [("otlp", ("otlp",)), ("console", ("console",)), ("otlp, Console", ("otlp", "console")), ("none", ())],
)
def test_otel_traces_exporter_names_the_exporters_even_without_an_endpoint(
    exporters_for: ExportersFor, value: str, named: tuple[str, ...]
) -> None:
    assert exporters_for(OTEL_TRACES_EXPORTER=value) == named


def test_otel_traces_exporter_none_wins_over_an_endpoint_and_the_old_switch(exporters_for: ExportersFor) -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert exporters_for(OTEL_TRACES_EXPORTER="none", HINDSIGHT_OTEL_ENABLED="true", **endpoint) == ()


def test_otel_traces_exporter_otlp_exports_even_when_the_old_switch_says_false(exporters_for: ExportersFor) -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert exporters_for(OTEL_TRACES_EXPORTER="otlp", HINDSIGHT_OTEL_ENABLED="false", **endpoint) == ("otlp",)


def test_the_old_switch_set_to_false_keeps_an_endpoint_alone_from_turning_tracing_on(
    exporters_for: ExportersFor,
) -> None:
    compose = {"HINDSIGHT_OTEL_ENABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318"}
    assert exporters_for(**compose) == ()  # what docker-compose.yml sets by default: an endpoint, the switch off


def test_the_old_hindsight_switch_alone_turns_otlp_on_at_the_exporters_default_endpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = settings_with(monkeypatch, tmp_path, HINDSIGHT_OTEL_ENABLED="true")
    assert settings.observability.otel_traces_exporters() == ("otlp",)
    assert otlp_traces_endpoint(settings) is None  # the exporter's own default: http://localhost:4318/v1/traces
    provider = build_tracer_provider(settings)
    assert provider is not None
    provider.shutdown()


@pytest.mark.parametrize("value", ["true", "TRUE", " True "])
def test_otel_sdk_disabled_turns_tracing_off_whatever_else_is_set(exporters_for: ExportersFor, value: str) -> None:
    everything = {
        "OTEL_TRACES_EXPORTER": "otlp,console",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",  # not even an error: nothing is exported
        "HINDSIGHT_OTEL_ENABLED": "true",
    }
    assert exporters_for(OTEL_SDK_DISABLED=value, **everything) == ()


@pytest.mark.parametrize("value", ["false", "", "1", "yes"])
def test_otel_sdk_disabled_is_true_only_when_it_says_true(exporters_for: ExportersFor, value: str) -> None:
    assert exporters_for(OTEL_SDK_DISABLED=value, OTEL_TRACES_EXPORTER="console") == ("console",)


def test_empty_otel_variables_count_as_unset(exporters_for: ExportersFor) -> None:
    empty = {
        "OTEL_SDK_DISABLED": "",
        "OTEL_TRACES_EXPORTER": "",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": " ",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "",
        "HINDSIGHT_OTEL_ENABLED": "",
    }
    assert exporters_for(**empty) == ()


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"])
def test_a_grpc_protocol_is_refused_when_settings_are_read_saying_what_to_set_instead(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        settings_with(monkeypatch, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4317", **{variable: "grpc"})
    message = str(refused.value)
    assert "'grpc'" in message
    assert "http/protobuf" in message and "4318" in message


def test_the_traces_protocol_wins_over_the_general_one(exporters_for: ExportersFor) -> None:
    protocols = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    assert exporters_for(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", **protocols) == ("otlp",)


def test_a_grpc_protocol_does_not_matter_to_the_console_exporter(exporters_for: ExportersFor) -> None:
    assert exporters_for(OTEL_TRACES_EXPORTER="console", OTEL_EXPORTER_OTLP_PROTOCOL="grpc") == ("console",)


@pytest.mark.parametrize(("value", "words"), [("zipkin", "zipkin is not available"), ("none,otlp", "'none' cannot")])
def test_an_exporter_that_is_not_installed_or_a_contradiction_is_refused_at_startup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        settings_with(monkeypatch, tmp_path, OTEL_TRACES_EXPORTER=value)


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/otlp/"}, "http://collector:4318/otlp/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"},
            "http://t:1/x",
        ),
    ],
)
def test_the_base_endpoint_gets_the_traces_path_and_a_traces_endpoint_is_used_as_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], url: str
) -> None:
    assert otlp_traces_endpoint(settings_with(monkeypatch, tmp_path, **env)) == url


# -- spans at a real receiver -----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("signal_url", [False, True], ids=["base endpoint", "OTEL_TRACES_EXPORTER + traces endpoint"])
async def test_spans_of_a_tool_call_reach_an_otlp_receiver_named_only_by_standard_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mint: Mint, receiver: OtlpReceiver, signal_url: bool
) -> None:
    where = (
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url + "/collector/traces"}
        if signal_url
        else {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    )
    settings = settings_with(
        monkeypatch,
        tmp_path,
        OTEL_SERVICE_NAME="hindsight-ci",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=ci",
        OTEL_EXPORTER_OTLP_HEADERS="x-collector-key=k-123",
        **where,
    )
    async with running(create_app(settings)) as app:
        async with mcp_session(app, mint()) as client:
            data(await client.call_tool("write_memory", {"content": "Spans go to the collector"}))
        assert app.state.tracer_provider.force_flush(10_000)  # exports what the batch processor holds, then returns
        names = receiver.span_names()
        assert "tool write_memory" in names
        assert "POST /mcp" in names
        assert "auth.verify_token" in names
    assert {export.path for export in receiver.exports} == {"/collector/traces" if signal_url else "/v1/traces"}
    for export in receiver.exports:
        assert export.headers["content-type"] == "application/x-protobuf"
        assert export.headers["x-collector-key"] == "k-123"
        for resource in export.resources():
            assert resource["service.name"] == "hindsight-ci"
            assert resource["deployment.environment.name"] == "ci"
            assert resource["service.version"] == VERSION


@pytest.mark.anyio
@pytest.mark.parametrize(
    "off",
    [
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp", "HINDSIGHT_OTEL_ENABLED": "true"},
        {"OTEL_TRACES_EXPORTER": "none", "HINDSIGHT_OTEL_ENABLED": "true"},
        {"HINDSIGHT_OTEL_ENABLED": "false"},
    ],
    ids=["sdk disabled", "exporter none", "old switch false"],
)
async def test_nothing_reaches_the_receiver_when_tracing_is_switched_off_despite_an_endpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mint: Mint, receiver: OtlpReceiver, off: dict[str, str]
) -> None:
    settings = settings_with(monkeypatch, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, **off)
    async with running(create_app(settings)) as app:
        assert app.state.tracer_provider is None
        async with mcp_session(app, mint()) as client:
            data(await client.call_tool("write_memory", {"content": "Nobody traces this"}))
    assert receiver.exports == []  # the lifespan has ended: a provider would have flushed everything by now


@pytest.mark.anyio
async def test_a_deployment_set_up_for_the_old_switch_still_exports_and_flushes_on_shutdown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mint: Mint, receiver: OtlpReceiver
) -> None:
    settings = settings_with(  # what docker-compose.yml and the Helm chart set before the standard variables
        monkeypatch,
        tmp_path,
        HINDSIGHT_OTEL_ENABLED="true",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
    )
    async with running(create_app(settings)) as app, mcp_session(app, mint()) as client:
        data(await client.call_tool("recall_memory", {"query": "anything"}))
    # no force_flush: leaving the lifespan shuts the provider down, which exports what is queued, last of all
    assert "tool recall_memory" in receiver.span_names()
    assert receiver.span_names()[-1] == "vector_store.close"  # closing the runtime is traced too
    assert {r["service.name"] for export in receiver.exports for r in export.resources()} == {"hindsight"}
