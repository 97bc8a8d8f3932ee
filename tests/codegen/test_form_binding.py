"""Multipart forms bound by the generated routes: every problem is a 400/422 whose details can
be written as JSON, whatever parts a client sends (a repeated part name was a 500: the error's
``input`` held the file objects)."""

from __future__ import annotations

import io
import json

import pytest
from starlette.datastructures import UploadFile

from codegen.runtime.bodies import FormField, bind_form
from webrest import BadRequest


def upload(name: str) -> UploadFile:
    return UploadFile(io.BytesIO(b"x"), filename=name)


def refused(form: dict[str, object], fields: list[FormField], **options: object) -> list[dict]:
    with pytest.raises(BadRequest) as raised:
        bind_form(form, fields, **options)  # type: ignore[arg-type]
    details = [
        {"loc": list(d.loc), "msg": d.msg, "type": d.type, "input": d.input}
        for d in raised.value.details
    ]
    json.dumps(details)  # what the error body holds must be JSON
    return details


def test_a_repeated_name_among_extra_files_is_refused_with_the_file_names() -> None:
    form: dict[str, object] = {"a": upload("a.txt"), "b": [upload("b1.txt"), upload("b2.txt")]}
    details = refused(form, [FormField("files", "files", required=False)])
    assert details == [
        {
            "loc": ["body", "b"],
            "msg": "Value error, each file needs a part name of its own (this one is repeated)",
            "type": "value_error",
            "input": ["b1.txt", "b2.txt"],
        }
    ]


def test_extra_parts_are_shown_by_file_name_when_forbidden() -> None:
    form: dict[str, object] = {
        "file": upload("doc.txt"),
        "extra": [upload("x.txt"), "text"],
        "other": upload("y.txt"),
    }
    details = refused(form, [FormField("file", "file", required=True)], forbid_extra=True)
    assert [(d["loc"], d["input"]) for d in details] == [
        (["body", "extra"], ["x.txt", "text"]),
        (["body", "other"], "y.txt"),
    ]


def test_distinct_names_bind() -> None:
    a, b = upload("a.txt"), upload("b.txt")
    bound = bind_form({"a": a, "b": b}, [FormField("files", "files", required=False)])
    assert bound == {"files": {"a": a, "b": b}}
