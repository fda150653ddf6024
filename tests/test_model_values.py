"""Every state object of the model is an immutable value. States are shared between
explored branches and each renders its repr once (model/core.py ``CachedRepr``), so an
object that could change after construction would corrupt both: a test of the contract
the module docstrings state, over every class that caches its repr."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import toolcall_sim.model as model
from toolcall_sim.model.core import CachedRepr


def _cached_repr_classes() -> list[type]:
    for info in pkgutil.walk_packages(model.__path__, model.__name__ + "."):
        importlib.import_module(info.name)
    seen, todo = [], list(CachedRepr.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_every_class_with_a_cached_repr_is_a_frozen_dataclass():
    classes = _cached_repr_classes()
    assert len(classes) > 20
    thawed = [f"{c.__module__}.{c.__qualname__}" for c in classes
              if not (dataclasses.is_dataclass(c) and c.__dataclass_params__.frozen)]
    assert thawed == []


def test_a_cached_repr_renders_what_a_dataclass_repr_would():
    """docs/mutation_equivalents.toml argues ``repr=False`` made True equivalent for these
    classes: dataclass's own repr renders the same text only while every field is a plain
    field shown in the repr and the class is top level. Keep it so."""
    for cls in _cached_repr_classes():
        assert cls.__qualname__ == cls.__name__, cls
        for f in cls.__dataclass_fields__.values():
            assert f._field_type is dataclasses._FIELD and f.repr, (cls, f.name)
