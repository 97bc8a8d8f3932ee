"""handlers.common.metrics_settings: the ``<PREFIX>METRICS_*`` variables, and the application
they instrument, over a real uvicorn server."""

from __future__ import annotations

from typing import ClassVar

import httpx
import pytest
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from handlers.common.metrics_settings import MetricsSettings, metrics_variables
from handlers.common.settings import SettingsError
from tests.webrest.support import serve
from tests.webrest.test_metrics import Items, scrape, total
from webrest import Application, RestApi


class ExampleSettings(MetricsSettings):
    """A service's settings with metrics, as rag and agents declare them."""

    model_config = SettingsConfigDict(alias_generator=metrics_variables("EXAMPLE_"))
    program: ClassVar[str] = "example"

    host: str = Field("127.0.0.1", validation_alias="EXAMPLE_HOST", description="listener")


def app() -> Application:
    return Application({"/": RestApi(Items())})


def test_the_variables_carry_the_service_prefix() -> None:
    settings = ExampleSettings.from_env(
        {
            "EXAMPLE_METRICS_ENABLED": "off",
            "EXAMPLE_METRICS_PORT": "9464",
            "EXAMPLE_METRICS_HOST": "10.0.0.1",
            "EXAMPLE_METRICS_PATH": "/internal/metrics",
            "METRICS_PORT": "1",  # another service's, unprefixed: not read
        }
    )
    assert (settings.metrics_enabled, settings.metrics_port) == (False, 9464)
    assert (settings.metrics_host, settings.metrics_path) == ("10.0.0.1", "/internal/metrics")
    assert ExampleSettings.variable_names("metrics_port") == ("EXAMPLE_METRICS_PORT",)
    assert ExampleSettings.variable_names("host") == ("EXAMPLE_HOST",)
    defaults = ExampleSettings.from_env({})
    assert (defaults.metrics_enabled, defaults.metrics_port) == (True, None)
    assert defaults.metrics_path == "/metrics"


@pytest.mark.parametrize(
    ("variable", "text"),
    [("EXAMPLE_METRICS_PORT", "65536"), ("EXAMPLE_METRICS_PORT", "x"),
     ("EXAMPLE_METRICS_PATH", "metrics"), ("EXAMPLE_METRICS_ENABLED", "maybe")],
)  # fmt: skip
def test_an_invalid_value_names_its_variable(variable: str, text: str) -> None:
    with pytest.raises(SettingsError, match=f"^{variable}="):
        ExampleSettings.from_env({variable: text})


def test_on_the_service_port() -> None:
    settings = ExampleSettings.from_env({"EXAMPLE_METRICS_PATH": "/internal/metrics"})
    served_app = app()
    metrics = settings.instrument(served_app)
    assert metrics is not None
    assert settings.serve_metrics(metrics, "127.0.0.1") is None
    with serve(served_app) as server:
        httpx.get(server.url + "/items/1")
        assert httpx.get(server.url + "/metrics").status_code == 404
        samples = scrape(server.url + "/internal/metrics")
    assert total(samples, "http_requests_total", operation="get_item") == 1


def test_off() -> None:
    settings = ExampleSettings.from_env({"EXAMPLE_METRICS_ENABLED": "false"})
    served_app = app()
    assert settings.instrument(served_app) is None
    assert settings.serve_metrics(None, "127.0.0.1") is None
    with serve(served_app) as server:
        assert httpx.get(server.url + "/metrics").status_code == 404


def test_on_a_port_of_their_own() -> None:
    settings = ExampleSettings.from_env({"EXAMPLE_METRICS_PORT": "0"})
    served_app = app()
    metrics = settings.instrument(served_app, namespace="example")
    exposed = settings.serve_metrics(metrics, "127.0.0.1")
    assert exposed is not None and exposed.host == "127.0.0.1" and exposed.port > 0
    try:
        with serve(served_app) as server:
            httpx.get(server.url + "/items/1")
            assert httpx.get(server.url + "/metrics").status_code == 404
            samples = scrape(f"http://127.0.0.1:{exposed.port}/metrics")
    finally:
        exposed.close()
    assert total(samples, "example_http_requests_total", operation="get_item") == 1
