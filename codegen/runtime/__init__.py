"""What generated routes use at run time: the API error styles, request body validation and
turning a handler's result into a webrest ``Response``."""

from codegen.runtime.bodies import FormField, bind_form, bind_payload, validate_body
from codegen.runtime.errors import (
    envelope_renderer,
    fastapi_renderer,
    plain_text_renderer,
    request_id_filter,
)
from codegen.runtime.params import RFC3339
from codegen.runtime.results import success

__all__ = [
    "RFC3339",
    "FormField",
    "bind_form",
    "bind_payload",
    "envelope_renderer",
    "fastapi_renderer",
    "plain_text_renderer",
    "request_id_filter",
    "success",
    "validate_body",
]
