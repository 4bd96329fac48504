"""How to call one user function: the single place tools, prompts and resources inspect it.

``HandlerSpec`` resolves the function's type hints once (a name that cannot be resolved is
a ``TypeError`` at registration that says what to do, never a silent fallback), finds the
parameter that takes the request's ``Context`` — also when it is written ``Context | None``,
``Optional[Context]`` or ``Annotated[Context, ...]``, or as a string annotation — detects
whether calling it gives a coroutine (``async def``, an object with an async ``__call__``,
a ``functools.partial`` of either), and invokes it: async functions on the event loop,
sync ones in a worker thread so they never block it.

An ``async def`` whose own code has no ``await``, ``async for`` or ``async with`` cannot
suspend: calling it runs it to the end at once. Such a function (``never_waits``) is run
inline by ``invoke_now`` (in a copy of the current context, as a task would be), so the
request is answered without creating a task or waiting for another loop turn — on every
Python version (3.12's eager tasks do the same for any coroutine, but not on 3.11).
"""

from __future__ import annotations

import builtins
import contextvars
import functools
import inspect
import opcode
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

import anyio.to_thread

from .context import Context

# Opcodes by which a coroutine's own code can suspend (await, async for/with, yield).
_SUSPENDING_OPS = frozenset(
    opcode.opmap[name]
    for name in ("GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH",
                 "SEND", "YIELD_VALUE", "END_ASYNC_FOR")
    if name in opcode.opmap
)


def is_context_type(tp: Any) -> bool:
    """Whether an annotation asks for the ``Context``: ``Context`` (or a subclass), or
    that inside ``Optional``/``X | None`` or ``Annotated``."""
    origin = get_origin(tp)
    if origin is None and isinstance(tp, type):
        return issubclass(tp, Context)
    if origin is Annotated:
        return is_context_type(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(tp) if a is not type(None)]
        return len(args) == 1 and is_context_type(args[0])
    return False


def _target(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What to read hints from: the function itself, or a callable object's ``__call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn):
        return fn
    if isinstance(fn, type):  # a class: its constructor's parameters
        init: Callable[..., Any] = next(
            vars(k)["__init__"] for k in fn.__mro__ if "__init__" in vars(k))
        return init
    call: Callable[..., Any] = type(fn).__call__
    return call


def _is_async(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn):
        return False
    return not isinstance(fn, type) and inspect.iscoroutinefunction(type(fn).__call__)


def never_waits(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is a plain ``async def`` function whose own code cannot suspend (no
    ``await``, ``async for``, ``async with``): calling it and sending ``None`` into the
    coroutine runs the whole body. Wrapped, partial or callable objects are not judged."""
    if not isinstance(fn, types.FunctionType) or not inspect.iscoroutinefunction(fn):
        return False
    code = fn.__code__.co_code
    return not any(op in _SUSPENDING_OPS for op in code[::2])


@functools.lru_cache(maxsize=512)
def _compiled(text: str) -> types.CodeType:
    return compile(text, "<annotation>", "eval")


def _quick_hints(target: Callable[..., Any]) -> dict[str, Any] | None:
    """A plain function's hints, its string annotations (``from __future__ import
    annotations``) evaluated in its module with each distinct text compiled once per
    process: ``typing.get_type_hints`` compiles every string anew, about 70 µs each, a
    third of what registering a tool costs at start-up (issue #28). None when a hint
    needs ``get_type_hints``' full treatment (a quoted name inside a hint, a method)."""
    if not isinstance(target, types.FunctionType):
        return None
    home: Any = target
    while hasattr(home, "__wrapped__"):  # as get_type_hints: the wrapped function's module
        home = home.__wrapped__
    namespace = getattr(home, "__globals__", None)
    if not isinstance(namespace, dict):
        return None
    hints: dict[str, Any] = {}
    for name, value in target.__annotations__.items():
        if isinstance(value, str):
            if "'" in value or '"' in value:
                return None  # a forward reference inside: get_type_hints resolves those
            if value.isidentifier() and value in namespace:
                value = namespace[value]
            elif value.isidentifier() and hasattr(builtins, value):
                value = getattr(builtins, value)
            else:
                try:
                    value = eval(_compiled(value), namespace)
                except Exception:
                    return None  # get_type_hints then says what is wrong, or finds it
        elif value is not None and not isinstance(value, type) and "ForwardRef" in repr(value):
            return None
        hints[name] = type(None) if value is None else value
    return hints


def resolve_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s type hints with ``Annotated`` extras kept, strings resolved in the module
    (then the closure); ``TypeError`` explaining the fix when a name is unknown."""
    target = _target(fn)
    quick = _quick_hints(target)
    if quick is not None:
        return quick
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        pass
    try:
        closure = dict(inspect.getclosurevars(target).nonlocals)
        return typing.get_type_hints(target, localns=closure, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the type hints of {getattr(fn, '__qualname__', fn)!r}: {exc}. "
            "Define the types it uses at module level (string annotations from 'from "
            "__future__ import annotations' are resolved in the module's namespace)."
        ) from None


class HandlerSpec:
    """A user function as mcpkit calls it (see the module docstring)."""

    __slots__ = ("any_keyword", "context_param", "fn", "hints", "is_async", "name",
                 "never_waits", "parameters")

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"expected a function or callable object, got {fn!r}")
        self.fn = fn
        self.name: str = getattr(fn, "__name__", None) or type(fn).__name__
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"cannot read the parameters of {fn!r}: {exc}") from None
        self.hints = resolve_hints(fn)
        self.is_async = _is_async(fn)
        self.never_waits = never_waits(fn)
        self.context_param: str | None = None
        #: The parameters the caller fills in (the Context and ``*args``/``**kwargs``
        #: excluded), with their resolved annotation (``inspect.Parameter.empty`` if none).
        self.parameters: list[tuple[inspect.Parameter, Any]] = []
        #: Whether it takes ``**kwargs``: then any name may be passed to it.
        self.any_keyword = False
        for name, param in signature.parameters.items():
            hint = self.hints.get(name, param.annotation)
            if is_context_type(hint):
                if self.context_param is not None:
                    raise TypeError(f"{self.name!r} takes the Context twice ({name!r} and "
                                    f"{self.context_param!r}); keep one")
                self.context_param = name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                self.any_keyword = self.any_keyword or param.kind is param.VAR_KEYWORD
                continue
            self.parameters.append((param, hint))

    @property
    def return_hint(self) -> Any:
        """The resolved return annotation (``inspect.Signature.empty`` if none)."""
        return self.hints.get("return", inspect.Signature.empty)

    async def invoke(self, kwargs: dict[str, Any], ctx: Context | None) -> Any:
        """Call the function with ``kwargs`` (and the context, if it takes one)."""
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        if self.is_async:
            return await self.fn(**kwargs)
        value = await anyio.to_thread.run_sync(functools.partial(self.fn, **kwargs))
        if inspect.isawaitable(value):  # a plain function that returned a coroutine
            value = await value
        return value

    def invoke_now(self, kwargs: dict[str, Any], ctx: Context | None) -> Any:
        """Call a ``never_waits`` function to the end, now, in a copy of the current
        context (what its task would have run in); its exceptions propagate."""
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        coro = self.fn(**kwargs)
        try:
            contextvars.copy_context().run(coro.send, None)
        except StopIteration as done:
            return done.value
        coro.close()  # unreachable for a function never_waits accepted
        raise RuntimeError(f"{self.name!r} suspended although its code has no await")
