"""The independent response checker: what it accepts besides openapi-core's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_core.validation.response.exceptions import MissingData

from tests.contract.openapi_check import ResponseChecker

RAG_SPEC = Path(__file__).resolve().parents[2] / "specs" / "rag.openapi.yaml"


@pytest.fixture(scope="module")
def checker() -> ResponseChecker:
    return ResponseChecker(RAG_SPEC)


def test_an_empty_plain_text_answer_is_the_empty_string(checker: ResponseChecker) -> None:
    plain = "text/plain; charset=utf-8"
    checker.check("POST", "/generate", 200, plain, b"", {"content-type": plain})


def test_an_empty_json_body_is_still_missing_data(checker: ResponseChecker) -> None:
    with pytest.raises(MissingData):
        checker.check(
            "POST",
            "/documentSearch",
            200,
            "application/json",
            b"",
            {"content-type": "application/json"},
        )
