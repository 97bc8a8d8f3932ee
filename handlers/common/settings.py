"""The services' settings model: pydantic-settings classes read from the environment.

Every service declares its settings as a :class:`ServiceSettings` subclass: one field per
variable, the variable's name (and any upstream alias) as the field's ``validation_alias``, its
meaning as the field's ``description`` (the generated table of every setting, ``docs/
settings.md``, is made from these), and validators for the formats the service accepts. Then:

* :meth:`ServiceSettings.from_env` reads ``os.environ`` (or a given mapping, for tests) and
  raises :class:`SettingsError` with one line naming the variable, the value and what it
  accepts; an empty variable counts as unset (as upstream's ``os.Getenv`` does);
* ``LOG_LEVEL`` and ``LOG_FORMAT`` mean the same everywhere (:data:`LogLevel`,
  :data:`LogFormat`, ``handlers.common.logs``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

__all__ = [
    "Flag",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "LogFormat",
    "LogLevel",
    "ServiceSettings",
    "SettingsError",
    "environment",
]


def _flag(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


Flag = Annotated[bool, BeforeValidator(_flag)]
"""A setting that is on or off: ``1``, ``true``, ``yes``, ``on`` or ``0``, ``false``, ``no``,
``off``, in any case."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The levels every service accepts (any case; ``WARN`` is ``WARNING``, ``TRACE`` is ``DEBUG``)."""
LOG_FORMATS = ("plain", "text", "json")
"""``plain``: ``<time> <LEVEL> <logger> <message>``; ``text``: ``time=… level=… msg=…``
(logfmt, as the Go rate limit service writes); ``json``: one object per line with
``@timestamp``, ``@message`` and ``level``."""

_LEVEL_ALIASES = {"WARN": "WARNING", "TRACE": "DEBUG"}


class SettingsError(ValueError):
    """A setting has a value the service cannot use; the message names it."""


def _log_level(value: object) -> object:
    if not isinstance(value, str):
        return value
    level = value.strip().upper()
    level = _LEVEL_ALIASES.get(level, level)
    if level not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)} (or WARN, TRACE)")
    return level


def _log_format(value: object) -> object:
    if not isinstance(value, str):
        return value
    chosen = value.strip().lower()
    if chosen not in LOG_FORMATS:
        raise ValueError(f"expected one of {', '.join(LOG_FORMATS)}")
    return chosen


LogLevel = Annotated[str, BeforeValidator(_log_level)]
"""A ``LOG_LEVEL`` value, normalised to one of :data:`LOG_LEVELS`."""
LogFormat = Annotated[
    Literal["plain", "text", "json"], BeforeValidator(_log_format), AfterValidator(str)
]
"""A ``LOG_FORMAT`` value, one of :data:`LOG_FORMATS`."""

_ENVIRONMENT: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "settings_environment", default=None
)


@contextlib.contextmanager
def environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """Read settings from ``env`` instead of ``os.environ`` inside the block."""
    token = _ENVIRONMENT.set(env)
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over the current :func:`environment`."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        chosen = _ENVIRONMENT.get()
        source = os.environ if chosen is None else chosen
        return parse_env_vars(source, True, True, None)


class ServiceSettings(BaseSettings):
    """The base of every service's settings: the environment only (no ``.env`` files, no
    secrets directory), variable names exactly as declared, empty values as unset, frozen."""

    model_config = {
        "case_sensitive": True,
        "populate_by_name": True,
        "env_ignore_empty": True,
        "extra": "ignore",
        "frozen": True,
        "validate_default": False,
    }

    program: ClassVar[str] = "service"
    """The name error messages start with (``agents-server: …``)."""
    always_logged: ClassVar[tuple[str, ...]] = ()
    """Loggers whose records show at INFO whatever ``LOG_LEVEL`` (start-up announcements)."""

    log_level: LogLevel = Field(
        "INFO",
        validation_alias="LOG_LEVEL",
        description="least important log records shown: `DEBUG`, `INFO`, `WARNING` (`WARN`) "
        "or `ERROR` (`TRACE` is `DEBUG`)",
    )
    log_format: LogFormat = Field(
        "plain",
        validation_alias="LOG_FORMAT",
        description="`plain` (`<time> <LEVEL> <logger> <message>`), `text` "
        "(`time=… level=… msg=…`) or `json` (one object per line)",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        del env_settings, dotenv_settings, file_secret_settings
        return (init_settings, _Environment(settings_cls))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings ``env`` (default ``os.environ``) gives; raises :class:`SettingsError`
        naming the first variable that is invalid."""
        with environment(env):
            try:
                return cls()
            except ValidationError as error:
                raise SettingsError(cls.explain(error, env)) from None

    def changed(self, **changes: Any) -> Self:
        """A copy with ``changes`` (by field name), every value validated again."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        return self.model_validate({**values, **changes})

    @classmethod
    def explain(cls, error: ValidationError, env: Mapping[str, str] | None) -> str:
        """One line about the first problem: ``NAME='value' is invalid: <what it accepts>``."""
        source = os.environ if env is None else env
        problem = error.errors(include_url=False)[0]
        message = str(problem["msg"]).removeprefix("Value error, ")
        if not problem["loc"]:  # a check of several settings together: its message names them
            return message
        where = str(problem["loc"][0])  # the field, or the first name of its variable
        field = next(
            (f for f in cls.model_fields if where == f or where in cls.variable_names(f)), where
        )
        names = cls.variable_names(field) or (where,)
        name = next((n for n in names if source.get(n)), names[0])
        if name in source:
            return f"{name}={source[name]!r} is invalid: {message}"
        return f"{name} is invalid: {message}"

    @classmethod
    def variable_names(cls, field: str) -> tuple[str, ...]:
        """The environment variables of ``field``: its name first, then its aliases."""
        info = cls.model_fields.get(field)
        if info is None:
            return ()
        alias: Any = info.validation_alias
        if alias is None:
            return (info.alias or field,)
        if isinstance(alias, str):
            return (alias,)
        return tuple(
            str(choice) for choice in getattr(alias, "choices", ()) if isinstance(choice, str)
        )
