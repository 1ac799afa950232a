"""Through the real app: `Settings` with a PEM public key or a JWKS URL reach the bearer auth on /mcp."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette

from gateway.web.app import create_app, jwt_settings
from ops.config import Settings
from tests.conftest import HEADERS, INITIALIZE
from tests.tenancy.conftest import TEST_SECRET
from tests.tenancy.signing import JwksServer, KeyPair, hmac_token

PayloadFactory = Callable[..., dict[str, Any]]


def settings(data_dir: Path, **values: Any) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, maintenance_interval_seconds=3600, **values)  # type: ignore[call-arg]


async def initialize(app: Starlette, *tokens: str) -> list[httpx2.Response]:
    """POST an MCP initialize with each token, with the app's lifespan running."""
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8080") as http,
    ):
        return [
            await http.post("/mcp", json=INITIALIZE, headers={**HEADERS, "authorization": f"Bearer {token}"})
            for token in tokens
        ]


@pytest.mark.anyio
async def test_the_gateway_accepts_an_rs256_token_and_refuses_the_hs256_token_signed_with_its_public_key(
    tmp_path: Path, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    app = create_app(settings(tmp_path / "data", jwt_public_key=rsa_old.public_pem, jwt_algorithms=["RS256"]))
    confused = hmac_token(make_payload(), rsa_old.public_pem.encode())

    accepted, refused = await initialize(app, rsa_old.sign(make_payload()), confused)

    assert accepted.status_code == 200
    assert accepted.json()["result"]["serverInfo"]["name"] == "hindsight"
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert not (tmp_path / "data" / "jwt-secret").exists()  # no dev secret with a public key


@pytest.mark.anyio
async def test_the_gateway_verifies_tokens_against_a_jwks_url(
    tmp_path: Path, rsa_old: KeyPair, attacker_key: KeyPair, jwks_server: JwksServer, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old)
    app = create_app(settings(tmp_path / "data", jwt_jwks_url=jwks_server.url))

    accepted, unknown = await initialize(app, rsa_old.sign(make_payload()), attacker_key.sign(make_payload()))

    assert (accepted.status_code, unknown.status_code) == (200, 401)
    assert jwks_server.requests == 1


def test_jwt_settings_reads_several_public_keys_from_a_pem_file(
    tmp_path: Path, rsa_old: KeyPair, ec_p256: KeyPair
) -> None:
    pem_file = tmp_path / "idp-keys.pem"
    pem_file.write_text(rsa_old.public_pem + ec_p256.public_pem, encoding="utf-8")

    configured = jwt_settings(settings(tmp_path / "data", jwt_public_key=str(pem_file)))

    assert configured.public_keys == (rsa_old.public_pem.strip(), ec_p256.public_pem.strip())
    assert configured.algorithms == ("RS256", "ES256")
    assert configured.secret == ""


def test_jwt_settings_passes_the_jwks_options_through(tmp_path: Path) -> None:
    configured = jwt_settings(
        settings(
            tmp_path / "data",
            jwt_jwks_url="https://auth.example/.well-known/jwks.json",
            jwt_jwks_cache_seconds=600,
            jwt_jwks_min_refresh_seconds=10,
            jwt_jwks_timeout_seconds=2.5,
            jwt_algorithms=["ES256"],
        )
    )
    assert (configured.jwks_url, configured.algorithms) == ("https://auth.example/.well-known/jwks.json", ("ES256",))
    assert (configured.jwks_cache_seconds, configured.jwks_min_refresh_seconds, configured.jwks_timeout_seconds) == (
        600,
        10,
        2.5,
    )


def test_a_secret_and_a_public_key_together_are_refused_at_startup(tmp_path: Path, rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="exactly one JWT key source"):
        create_app(settings(tmp_path / "data", jwt_secret=SecretStr(TEST_SECRET), jwt_public_key=rsa_old.public_pem))


def test_hs256_with_a_public_key_is_refused_at_startup(tmp_path: Path, rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="algorithm confusion"):
        create_app(settings(tmp_path / "data", jwt_public_key=rsa_old.public_pem, jwt_algorithms=["HS256"]))
