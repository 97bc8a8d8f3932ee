"""The shared on/off setting type (agents and rag settings use it)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from handlers.common.settings import Flag

FLAG: TypeAdapter[bool] = TypeAdapter(Flag)


@pytest.mark.parametrize("text", ["1", "true", "Yes", " ON "])
def test_on(text: str) -> None:
    assert FLAG.validate_python(text) is True


@pytest.mark.parametrize("text", ["0", "FALSE", "no", "off"])
def test_off(text: str) -> None:
    assert FLAG.validate_python(text) is False


def test_anything_else_is_refused() -> None:
    with pytest.raises(ValidationError, match="expected true or false"):
        FLAG.validate_python("maybe")
