"""Finding the ``Server`` in a user's file: ``FILE[:OBJECT]``, as ``mcpkit run``,
``mcpkit install`` and ``mcpkit dev`` take it.

The file is imported as a module named after it, with its directory first on
``sys.path`` (so it can import its neighbours). ``OBJECT`` names the ``Server``;
without it the first of ``server``, ``app``, ``mcp`` that is a ``Server`` is taken, else
the only ``Server`` the module defines.
"""

from __future__ import annotations

import os
import sys
from typing import Any


class LoadError(Exception):
    """``FILE[:OBJECT]`` does not name a Server; the message says why."""


def load_server(spec: str) -> Any:
    import importlib.util

    from ..server import Server

    path, _, attr = spec.partition(":")
    if not os.path.isfile(path):
        raise LoadError(f"no such file: {path}")
    directory = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, directory)
    module_name = os.path.splitext(os.path.basename(path))[0]
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise LoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    loader_spec.loader.exec_module(module)
    if attr:
        obj = getattr(module, attr, None)
        if not isinstance(obj, Server):
            raise LoadError(f"{path} has no Server named {attr!r}")
        return obj
    for name in ("server", "app", "mcp"):
        obj = getattr(module, name, None)
        if isinstance(obj, Server):
            return obj
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    if len(found) == 1:
        return found[0]
    raise LoadError(
        f"{path} defines {len(found)} Server objects; name one with {path}:OBJECT"
    )
