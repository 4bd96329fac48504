"""The base of the client's result types: wire objects read into typed attributes.

The client reads every result a server sends into one of a few dozen small classes
(``client/types.py``). They were pydantic models, and importing pydantic alone costs a
fresh process about 130 ms: more than the rest of the client together, paid by every
``mcpkit call`` and every script that imports ``mcpkit.client`` (issue #28). What those
classes need is narrow and fixed: JSON values of a handful of shapes (strings, numbers,
booleans, objects, arrays, literals, nested objects, one union told apart by its
``type``), camelCase wire names, unknown fields kept. This module does exactly that from
the classes' own annotations, checked once when each class is defined; pydantic stays
what ``result_type=`` uses to read a tool's structured content into the caller's types.

A class declares its fields as annotated class attributes with their defaults::

    class Icon(Wire):
        src: str
        mime_type: str | None = None

``Icon.from_wire({"src": "a.png", "mimeType": "image/png"})`` checks each value against
its annotation and raises ``WireError`` (naming the path) when it does not fit;
``to_wire()`` gives the object back as the wire's JSON, unset fields left out and the
fields a newer server added (kept under their own names, readable as attributes) back in.
"""

import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Self, get_args, get_origin

__all__ = ["Wire", "WireError", "field"]

Reader = Callable[[Any, str], Any]
_MISSING: Any = object()


class WireError(ValueError):
    """A value that does not have the shape its field declares; ``path`` says where
    (``annotations.readOnlyHint``, ``content.0.text``)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '<object>'}: {problem}")
        self.path = path
        self.problem = problem


class _Spec:
    """What ``field()`` says about one field beyond its annotation."""

    __slots__ = ("aliases", "default", "min_length", "wire")

    def __init__(self, default: Any, wire: str | None, aliases: tuple[str, ...],
                 min_length: int) -> None:
        self.default = default
        self.wire = wire
        self.aliases = aliases
        self.min_length = min_length


def field(default: Any = _MISSING, *, wire: str | None = None,
          aliases: tuple[str, ...] = (), min_length: int = 0) -> Any:
    """A field's default with more about it: its wire name when it is not the camelCase
    of the attribute's (``wire="_meta"``), other wire names it is read from
    (``aliases``), the shortest string it accepts."""
    return _Spec(default, wire, aliases, min_length)


def camel(name: str) -> str:
    """``input_schema`` -> ``inputSchema``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class _Field:
    """One field of a class: how it is named on the wire and how its value is read."""

    __slots__ = ("attr", "default", "names", "read", "wire")

    def __init__(self, attr: str, wire: str, names: tuple[str, ...], read: Reader,
                 default: Any) -> None:
        self.attr = attr
        self.wire = wire
        self.names = names  # what it may be called in the input: wire name, aliases, attr
        self.read = read
        self.default = default


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _simple(kind: type, name: str) -> Reader:
    def read(value: Any, path: str) -> Any:
        if type(value) is kind:
            return value
        raise WireError(path, f"should be {name}, got {_describe(value)}")
    return read


def _read_int(value: Any, path: str) -> Any:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise WireError(path, f"should be an integer, got {_describe(value)}")


def _read_float(value: Any, path: str) -> Any:
    if type(value) in (int, float):
        return value
    raise WireError(path, f"should be a number, got {_describe(value)}")


def _read_any(value: Any, path: str) -> Any:
    return value


_READERS: dict[Any, Reader] = {
    str: _simple(str, "a string"), bool: _simple(bool, "a boolean"), int: _read_int,
    float: _read_float, Any: _read_any, dict: _simple(dict, "an object"),
}


def _reader(hint: Any) -> Reader:
    """How a value annotated ``hint`` is read from JSON."""
    if isinstance(hint, str):
        raise TypeError(f"the annotation {hint!r} is a string: a module declaring client "
                        "result types cannot use `from __future__ import annotations`")
    if hint in _READERS:
        return _READERS[hint]
    if isinstance(hint, type) and issubclass(hint, Wire):
        return hint._read
    origin, args = get_origin(hint), get_args(hint)
    if origin is dict:
        return _READERS[dict]
    if origin is list:
        item = _reader(args[0])

        def read_list(value: Any, path: str) -> Any:
            if type(value) is not list:
                raise WireError(path, f"should be an array, got {_describe(value)}")
            return [item(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(value)]
        return read_list
    if origin is Literal:
        allowed = args

        def read_literal(value: Any, path: str) -> Any:
            if value in allowed and type(value) in (str, int, bool):
                return value
            raise WireError(path, f"should be one of {', '.join(map(repr, allowed))}, got "
                                  f"{_describe(value)}")
        return read_literal
    if origin in (types.UnionType, typing.Union):
        options = [a for a in args if a is not type(None)]
        inner = _union(options) if len(options) > 1 else _reader(options[0])
        if len(options) == len(args):
            return inner

        def read_optional(value: Any, path: str) -> Any:
            return None if value is None else inner(value, path)
        return read_optional
    raise TypeError(f"a client result type cannot hold {hint!r}")


def _union(options: list[Any]) -> Reader:
    """Objects of several classes told apart by their ``type`` (content blocks)."""
    by_type: dict[str, Callable[[Any, str], Any]] = {}
    for option in options:
        if not (isinstance(option, type) and issubclass(option, Wire)):
            raise TypeError(f"a union of client result types holds classes only: {option!r}")
        tag = option.__dict__.get("type")
        if not isinstance(tag, str):
            raise TypeError(f"{option.__name__} needs a literal 'type' to be in a union")
        by_type[tag] = option._read
    kinds = ", ".join(map(repr, by_type))

    def read_union(value: Any, path: str) -> Any:
        tag = value.get("type") if type(value) is dict else None
        read = by_type.get(tag) if isinstance(tag, str) else None
        if read is None:
            where = f"{path}.type" if path else "type"
            raise WireError(where, f"should be one of {kinds}, got {_describe(tag)}")
        return read(value, path)
    return read_union


def _min_length(read: Reader, least: int) -> Reader:
    def read_bounded(value: Any, path: str) -> Any:
        value = read(value, path)
        if len(value) < least:
            raise WireError(path, f"should have at least {least} character(s)")
        return value
    return read_bounded


class Wire:
    """A protocol object read from JSON: its fields as snake_case attributes, the
    fields it did not declare kept under their wire names (readable as attributes too,
    and sent back by ``to_wire()``)."""

    _fields: ClassVar[tuple[_Field, ...]] = ()
    _by_name: ClassVar[dict[str, _Field]] = {}
    _extra: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = {f.attr: f for f in cls._fields}
        for attr, hint in cls.__annotations__.items():
            origin: Any = get_origin(hint)
            if attr.startswith("_") or origin is ClassVar:
                continue
            fields[attr] = _make_field(cls, attr, hint)
        cls._fields = tuple(fields.values())
        cls._by_name = {name: f for f in cls._fields for name in f.names}

    def __init__(self, **values: Any) -> None:
        self._fill(values, "")

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        """An object of this class from its wire JSON; ``WireError`` when a value does
        not fit."""
        return cls._read(data, "")  # type: ignore[no-any-return]

    @classmethod
    def _read(cls, data: Any, path: str) -> Any:
        if type(data) is not dict:
            raise WireError(path, f"should be an object, got {_describe(data)}")
        obj = cls.__new__(cls)
        obj._fill(data, path)
        return obj

    def _fill(self, data: dict[str, Any], path: str) -> None:
        known = self._by_name
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                extra[key] = value
        self._extra = extra
        for f in self._fields:
            for name in f.names:
                if name in data:
                    value = data[name]
                    break
            else:
                if f.default is _MISSING:
                    raise WireError(f"{path}.{f.wire}" if path else f.wire,
                                    "is required and missing")
                default = f.default
                setattr(self, f.attr, default.copy() if type(default) in (list, dict)
                        else default)
                continue
            if value is None and f.default is None:
                setattr(self, f.attr, None)
                continue
            setattr(self, f.attr, f.read(value, f"{path}.{f.wire}" if path else f.wire))

    def __getattr__(self, name: str) -> Any:
        extra = self.__dict__.get("_extra")
        if extra is not None and name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_wire(self) -> dict[str, Any]:
        """This object as it travels: camelCase names, unset fields left out."""
        out: dict[str, Any] = {}
        for f in self._fields:
            value = getattr(self, f.attr)
            if value is not None:
                out[f.wire] = _wire(value)
        for key, value in self._extra.items():
            if value is not None:
                out[key] = _wire(value)
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Wire)
        return all(getattr(self, f.attr) == getattr(other, f.attr)
                   for f in self._fields) and self._extra == other._extra

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dicts it reads

    def __repr__(self) -> str:
        shown = [f"{f.attr}={getattr(self, f.attr)!r}" for f in self._fields]
        shown += [f"{key}={value!r}" for key, value in self._extra.items()]
        return f"{type(self).__name__}({', '.join(shown)})"


def _wire(value: Any) -> Any:
    if isinstance(value, Wire):
        return value.to_wire()
    if type(value) is list:
        return [_wire(v) for v in value]
    return value


def _make_field(cls: type, attr: str, hint: Any) -> _Field:
    raw = cls.__dict__.get(attr, _MISSING)
    spec = raw if isinstance(raw, _Spec) else _Spec(raw, None, (), 0)
    wire = spec.wire or camel(attr)
    read = _reader(hint)
    if spec.min_length:
        read = _min_length(read, spec.min_length)
    if isinstance(raw, _Spec):  # the class attribute is the plain default from now on
        if spec.default is _MISSING:
            delattr(cls, attr)
        else:
            setattr(cls, attr, spec.default)
    names = tuple(dict.fromkeys((wire, *spec.aliases, attr)))  # made once, read per object
    return _Field(attr, wire, names, read, spec.default)
