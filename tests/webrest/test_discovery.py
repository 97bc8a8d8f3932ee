"""Resource discovery: ``resources_in`` and ``resource_classes`` (upstream's ``ResourcesInTest``,
on the example's package and on packages written for each test)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.webrest_example.resources.avatars import Avatars
from examples.webrest_example.resources.users import Users
from examples.webrest_example.store import AvatarStorage, UserStore
from webrest import RestApi, resource_classes, resources_in

from .support import client, mount

Package = Callable[[dict[str, str]], str]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Package]:
    """Writes a package of modules (relative path → source, where ``{package}`` stands for the
    package's name) and returns its name; the modules are forgotten afterwards."""
    names: list[str] = []

    def write(files: dict[str, str]) -> str:
        name = f"discovered_{len(names)}_{abs(hash(str(tmp_path))) % 10**8}"
        names.append(name)
        for relative, source in {"__init__.py": "", **files}.items():
            path = tmp_path / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source).replace("{package}", name))
        importlib.invalidate_caches()
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    for module in list(sys.modules):
        if any(module == name or module.startswith(name + ".") for name in names):
            del sys.modules[module]


_CLASS = """

@Resource("/{prefix}")
class {name}:
    @Get("/")
    def get(self) -> str:
        return "{name}"
"""


def resource(*classes: str) -> str:
    """A module with a resource for each name, at ``/<name in lower case>``."""
    return "from webrest import Get, Resource\n" + "".join(
        _CLASS.format(name=name, prefix=name.lower()) for name in classes
    )


def names(instances: list[object]) -> list[str]:
    return [type(instance).__qualname__ for instance in instances]


# -- the example's package -----------------------------------------------------------------------


def test_using_a_package_name() -> None:
    assert resource_classes("examples.webrest_example.resources") == [Avatars, Users]


def test_using_a_module() -> None:
    from examples.webrest_example import resources

    assert resource_classes(resources) == [Avatars, Users]


def test_supply_a_factory() -> None:
    store, storage = UserStore(), AvatarStorage()
    created: list[type[Any]] = []

    def factory(cls: type[Any]) -> object:
        created.append(cls)
        return cls(store, storage)

    instances = resources_in("examples.webrest_example.resources", factory=factory)
    assert created == [Avatars, Users]
    assert [type(instance) for instance in instances] == [Avatars, Users]
    assert all(instance.store is store for instance in instances)  # type: ignore[attr-defined]
    api = RestApi(*instances)
    assert {endpoint.path for endpoint in api.endpoints} >= {"/users", "/users/{id:[0-9]+}/avatar"}


def test_a_class_needing_arguments_without_a_factory() -> None:
    with pytest.raises(TypeError) as raised:
        resources_in("examples.webrest_example.resources")
    message = str(raised.value)
    assert message.startswith(
        "Cannot create the resource examples.webrest_example.resources.avatars.Avatars"
    )
    assert "(store: 'UserStore', storage: 'AvatarStorage')" in message
    assert "factory=" in message


def test_a_factory_that_makes_nothing() -> None:
    with pytest.raises(TypeError, match="The factory made nothing for the resource"):
        resources_in("examples.webrest_example.resources", factory=lambda cls: None)


# -- packages written here -----------------------------------------------------------------------


def test_submodules_are_walked_in_name_order_and_definition_order(package: Package) -> None:
    name = package(
        {
            "zeta.py": resource("Zeta"),
            "alpha.py": resource("Beta", "Alpha"),
            "sub/__init__.py": "",
            "sub/deep/__init__.py": resource("Deep"),
        }
    )
    assert names(resources_in(name)) == ["Beta", "Alpha", "Deep", "Zeta"]


def test_only_classes_decorated_and_defined_in_the_package(package: Package) -> None:
    name = package(
        {
            "__init__.py": resource("Root"),
            "others.py": """\
                from examples.webrest_example.resources.users import Users  # defined elsewhere
                from webrest import Get, Resource
                from {package} import Root


                class Plain:
                    @Get("/plain")
                    def get(self) -> str:
                        return "plain"


                class Derived(Root):  # a resource's subclass, not decorated itself
                    pass


                @Resource("/again")
                class Redecorated(Root):
                    pass


                def function() -> None:
                    pass
                """,
        }
    )
    assert names(resources_in(name)) == ["Root", "Redecorated"]


async def test_resources_are_served(package: Package) -> None:
    name = package({"a.py": resource("A"), "b.py": resource("B")})
    instances = resources_in(name)
    assert names(instances) == ["A", "B"]
    async with client(mount(*instances)) as http:
        assert (await http.get("/a")).json() == "A"
        assert (await http.get("/b")).json() == "B"


def test_a_single_module(package: Package) -> None:
    name = package({"one.py": resource("One"), "two.py": resource("Two")})
    assert names(resources_in(f"{name}.one")) == ["One"]


def test_an_empty_package(package: Package) -> None:
    assert resources_in(package({"plain.py": "VALUE = 1\n"})) == []


def test_a_module_that_cannot_be_imported(package: Package) -> None:
    name = package({"good.py": resource("Good"), "broken.py": "import no_such_module\n"})
    with pytest.raises(ImportError, match="no_such_module"):
        resources_in(name)


def test_a_subpackage_that_cannot_be_imported(package: Package) -> None:
    name = package({"sub/__init__.py": "raise ImportError('sub is broken')\n"})
    with pytest.raises(ImportError, match="sub is broken"):
        resources_in(name)


def test_constructor_defaults_are_enough(package: Package) -> None:
    name = package(
        {
            "a.py": """\
                from webrest import Get, Resource


                @Resource("/a")
                class A:
                    def __init__(self, greeting: str = "hello") -> None:
                        self.greeting = greeting

                    @Get("/")
                    def get(self) -> str:
                        return self.greeting
                """
        }
    )
    [instance] = resources_in(name)
    assert instance.greeting == "hello"  # type: ignore[attr-defined]
