"""The reranker's settings: defaults, which reranker they choose, and the values refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.common.settings import SettingsError
from handlers.rag.rerank.settings import RerankSettings


def test_defaults_choose_no_reranker() -> None:
    settings = RerankSettings.from_env({})
    assert settings.rerank == "auto"
    assert settings.choice == "none"
    assert (settings.rerank_candidates, settings.rerank_batch) == (50, 16)
    assert (settings.rerank_max_tokens, settings.rerank_timeout) == (512, 10.0)


@pytest.mark.parametrize(
    ("env", "choice"),
    [
        ({"RAG_RERANK_URL": "http://127.0.0.1:8080/rerank"}, "remote"),
        ({"RAG_RERANK_MODEL": "/models/ms-marco"}, "local"),
        ({"RAG_RERANK": "ON", "RAG_RERANK_MODEL": "/models/ms-marco"}, "local"),
        ({"RAG_RERANK": "off", "RAG_RERANK_URL": "https://rerank.example/v1/rerank"}, "none"),
        ({"RAG_RERANK": "false", "RAG_RERANK_MODEL": "/models/ms-marco"}, "none"),
    ],
)
def test_the_choice_follows_the_mode_and_what_is_configured(
    env: dict[str, str], choice: str
) -> None:
    assert RerankSettings.from_env(env).choice == choice


def test_a_model_path_is_expanded() -> None:
    settings = RerankSettings.from_env({"RAG_RERANK_MODEL": " ~/models/x "})
    assert settings.rerank_model == Path("~/models/x").expanduser()


def test_the_api_key_is_not_shown() -> None:
    settings = RerankSettings.from_env(
        {"RAG_RERANK_URL": "http://127.0.0.1:1/rerank", "RAG_RERANK_API_KEY": "s3cret"}
    )
    assert "s3cret" not in repr(settings)
    assert settings.rerank_api_key is not None
    assert settings.rerank_api_key.get_secret_value() == "s3cret"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAG_RERANK": "sometimes"}, "RAG_RERANK='sometimes' is invalid: expected one of auto"),
        ({"RAG_RERANK": "on"}, "RAG_RERANK=on needs RAG_RERANK_URL or RAG_RERANK_MODEL"),
        (
            {"RAG_RERANK_URL": "http://127.0.0.1:1/rerank", "RAG_RERANK_MODEL": "/m"},
            "set RAG_RERANK_URL or RAG_RERANK_MODEL, not both",
        ),
        ({"RAG_RERANK_URL": "ftp://host/rerank"}, "RAG_RERANK_URL='ftp://host/rerank' is invalid"),
        ({"RAG_RERANK_CANDIDATES": "0"}, "RAG_RERANK_CANDIDATES='0' is invalid"),
        ({"RAG_RERANK_CANDIDATES": "201"}, "RAG_RERANK_CANDIDATES='201' is invalid"),
        ({"RAG_RERANK_BATCH": "many"}, "RAG_RERANK_BATCH='many' is invalid"),
        ({"RAG_RERANK_MAX_TOKENS": "8"}, "RAG_RERANK_MAX_TOKENS='8' is invalid"),
        ({"RAG_RERANK_TIMEOUT": "0"}, "RAG_RERANK_TIMEOUT='0' is invalid"),
        ({"RAG_RERANK_TIMEOUT": "inf"}, "RAG_RERANK_TIMEOUT='inf' is invalid"),
    ],
)
def test_invalid_values_are_refused_with_the_variable_named(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        RerankSettings.from_env(env)
    assert str(caught.value).startswith(message)
