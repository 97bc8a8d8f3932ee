"""Resource discovery: every ``@Resource`` class of a package, created, for a ``RestApi``.

A port of upstream's ``ResourcesIn``::

    api = RestApi(*resources_in("myapp.resources", factory=lambda cls: cls(store)))

The package and its subpackages are imported; the classes defined in them and decorated with
``@Resource`` themselves (a subclass of a resource is not one unless decorated too) are
created, by ``factory`` when one is given (dependency injection), else without arguments.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

from webrest.declarations import is_resource

__all__ = ["Factory", "resource_classes", "resources_in"]

Factory = Callable[[type[Any]], object]
"""Creates the instance of a resource class: ``lambda cls: cls(store)``."""


def resources_in(package: str | ModuleType, factory: Factory | None = None) -> list[object]:
    """An instance of every resource class in ``package`` (a name, or the imported module)
    and its subpackages, in :func:`resource_classes` order, made by ``factory(cls)`` or, without
    a factory, by ``cls()``: ``TypeError`` names a class that needs constructor arguments."""
    instances: list[object] = []
    for cls in resource_classes(package):
        instance = factory(cls) if factory is not None else _create(cls)
        if instance is None:
            raise TypeError(f"The factory made nothing for the resource {_name(cls)}")
        instances.append(instance)
    return instances


def resource_classes(package: str | ModuleType) -> list[type[Any]]:
    """The classes decorated with ``@Resource`` and defined in ``package`` or its submodules
    (imported here); in module name order, and in the order of definition within a module."""
    root = importlib.import_module(package) if isinstance(package, str) else package
    modules = {root.__name__: root}
    path = getattr(root, "__path__", None)
    if path is not None:  # a package, not a single module: import every module below it
        for info in pkgutil.walk_packages(path, root.__name__ + "."):
            modules[info.name] = importlib.import_module(info.name)  # raises what fails
    found: list[type[Any]] = []
    for name in sorted(modules):
        for value in vars(modules[name]).values():
            if isinstance(value, type) and value.__module__ == name and is_resource(value):
                found.append(value)
    return found


def _create(cls: type[Any]) -> object:
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to check: let the call tell
        return cls()
    try:
        signature.bind()
    except TypeError:
        raise TypeError(
            f"Cannot create the resource {_name(cls)} without arguments: its constructor takes"
            f" {signature}; pass resources_in(..., factory=...) to create it"
        ) from None
    return cls()


def _name(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
