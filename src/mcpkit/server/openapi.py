"""A server built from an OpenAPI 3.0/3.1 document: each operation a tool that calls it.

``Server.from_openapi(document, client)`` (``build``; also ``mcpkit.openapi``) reads the
document (a dict, JSON text or a path to a JSON file) and registers one tool per
operation on a new ``Server``; each call is sent
with ``client`` (an ``httpx.AsyncClient`` whose ``base_url`` is the API's and which
carries the API's credentials: headers, auth). ``Server.from_fastapi(app)`` does the same for a
FastAPI or Starlette app in this process, over httpx's ASGI transport (the document
is the app's own ``openapi()`` when none is given).

How an operation becomes a tool:

- its name is the ``operationId`` made model-friendly (``readItem`` stays, FastAPI's
  ``read_item_items__item_id__get`` becomes ``read_item_items_item_id_get``; characters
  a tool name cannot hold become ``_``), or ``<method>_<path>`` without one; names are
  made unique with ``_2``, ``_3``... and ``names={operationId: name}`` renames;
- its description is the summary and the description;
- its input schema has one property per parameter (path, query, header) and, for a JSON
  request body whose schema is an object, one per body property (a body of another
  shape is the ``body`` property); a name used twice gets its location appended
  (``id_query``). ``$ref``s to ``components/schemas`` are resolved into the tool's own
  ``$defs`` (only those it reaches), so each schema stands alone; OpenAPI 3.0's
  ``nullable`` becomes JSON Schema's ``"null"`` type;
- a 2xx ``application/json`` response whose schema is an object is its output schema;
- annotations follow the method: GET and HEAD are read-only, PUT and DELETE idempotent,
  DELETE destructive; every operation is open-world (it reaches another system).

A call fills the path (each value percent-encoded), the query, the headers and the body
from the arguments, and answers the API's JSON as structured content (and text). A
status of 400 or more is a tool error the model can act on: the status, its reason and
the start of the body; an API that cannot be reached is one too. The MCP caller's own
token is never sent on: the API's credentials are the client's (passing a token
through to another service is what the MCP security rules forbid).

``route_maps``: ``RouteMap(methods, pattern, kind)`` decide, first match wins, whether
an operation is a ``"tool"`` (default), a ``"resource"`` (a GET without parameters, at
``<scheme>://<path>``), a ``"template"`` (a GET whose parameters are all in its path)
or ``"exclude"``d.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import httpx

    from .app import Server

JSON = dict[str, Any]
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
KINDS = ("tool", "resource", "template", "exclude")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_UNDERSCORES = re.compile(r"__+")
_SCHEMA_REF = "#/components/schemas/"
MAX_BODY_SHOWN = 2000


class RouteMap:
    """Which operations become what: ``methods`` (upper or lower case; None: any),
    ``pattern`` (a regular expression searched in the path; None: any), ``kind``."""

    __slots__ = ("kind", "methods", "pattern")

    def __init__(self, methods: Iterable[str] | None = None, pattern: str | None = None,
                 kind: str = "tool") -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.methods = None if methods is None else {m.lower() for m in methods}
        self.pattern = None if pattern is None else re.compile(pattern)
        self.kind = kind

    def matches(self, method: str, path: str) -> bool:
        return (self.methods is None or method in self.methods) and (
            self.pattern is None or self.pattern.search(path) is not None)


def load(document: Mapping[str, Any] | str | PathLike[str]) -> JSON:
    """The OpenAPI document as a dict; ``ValueError`` saying what is wrong with it."""
    if isinstance(document, Mapping):
        doc: Any = dict(document)
    else:
        text = str(document)
        if isinstance(document, PathLike) or not text.lstrip().startswith("{"):
            text = Path(document).read_text(encoding="utf-8")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the OpenAPI document is not JSON ({exc}); load a YAML "
                             "document yourself and pass the dict") from None
    version = doc.get("openapi") if isinstance(doc, dict) else None
    if not isinstance(version, str) or not version.startswith("3."):
        raise ValueError("not an OpenAPI 3.x document: its 'openapi' field is "
                         f"{version!r} (Swagger 2.0 documents need converting first)")
    if not isinstance(doc.get("paths"), dict):
        raise ValueError("the OpenAPI document has no 'paths' object")
    return dict(doc)


class _Schemas:
    """JSON Schemas of one document made standalone: ``$ref``s to components resolved."""

    def __init__(self, doc: JSON) -> None:
        self.doc = doc
        components = doc.get("components")
        self.components: JSON = components if isinstance(components, dict) else {}
        self.nullable = not str(doc.get("openapi", "")).startswith("3.1")
        #: component name -> (its schema converted, the components it names)
        self._cache: dict[str, tuple[Any, set[str]]] = {}

    def ref(self, ref: str) -> Any:
        """What a local ``$ref`` (``#/components/...``) points at."""
        if not ref.startswith("#/"):
            raise ValueError(f"only references inside the document are followed, not {ref!r}")
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise ValueError(f"the reference {ref!r} points at nothing")
            node = node[part]
        return node

    def deref(self, node: Any) -> Any:
        """``node``, following ``$ref``s that are not schemas (parameters, bodies)."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
            node, seen = self.ref(node["$ref"]), seen + 1
        return node

    def standalone(self, schema: Any, defs: JSON) -> Any:
        """``schema`` with component references pointing into ``defs`` (filled with the
        components it reaches, each converted once for the whole document and shared)
        and 3.0's ``nullable`` turned into a ``"null"`` type."""
        refs: set[str] = set()
        out = self._convert(schema, refs, 0)
        pending = list(refs)
        while pending:  # the components reached, and those they reach
            name = pending.pop()
            if name in defs:
                continue
            converted, more = self._component(name)
            defs[name] = converted
            pending.extend(more)
        return out

    def _component(self, name: str) -> tuple[Any, set[str]]:
        found = self._cache.get(name)
        if found is None:
            refs: set[str] = set()
            found = self._cache[name] = (self._convert(self.ref(_SCHEMA_REF + name), refs, 0),
                                         refs)
        return found

    def _convert(self, schema: Any, refs: set[str], depth: int) -> Any:
        """``schema`` with references to components rewritten (their names added to
        ``refs``, not followed: recursive schemas need nothing more) and others inlined."""
        if depth > 64:
            raise ValueError("the document's schemas nest deeper than 64 levels")
        if isinstance(schema, list):
            return [self._convert(s, refs, depth + 1) for s in schema]
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SCHEMA_REF):
            name = ref[len(_SCHEMA_REF):]
            refs.add(name)
            return {"$ref": f"#/$defs/{name}"}
        if isinstance(ref, str):
            return self._convert(self.ref(ref), refs, depth + 1)
        out = {k: self._convert(v, refs, depth + 1) for k, v in schema.items()
               if k not in ("nullable", "example", "xml", "externalDocs")}
        if self.nullable and schema.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif "type" not in out:
                out = {"anyOf": [out, {"type": "null"}]}
        return out


def _root(schema: Any, defs: JSON) -> Any:
    """What a standalone schema stands for: the component its root ``$ref`` names."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        return defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def tool_name(raw: str) -> str:
    """A model-friendly tool name: runs of other characters become one ``_``."""
    return _UNDERSCORES.sub("_", _NOT_NAME.sub("_", raw)).strip("_")[:120] or "operation"


class Operation:
    """One operation of the document, ready to be called with a tool's arguments."""

    def __init__(self, schemas: _Schemas, path: str, method: str, op: JSON,
                 shared: list[Any]) -> None:
        self.path, self.method = path, method
        self.operation_id = op.get("operationId")
        raw = self.operation_id if isinstance(self.operation_id, str) else (
            f"{method}_{path}")
        self.name = tool_name(raw)
        text = [op.get("summary"), op.get("description")]
        self.description = "\n\n".join(t for t in text if isinstance(t, str) and t) or (
            f"{method.upper()} {path}")
        defs: JSON = {}
        props: JSON = {}
        required: list[str] = []
        self.where: dict[str, tuple[str, str]] = {}  # argument -> (location, its name)
        params = {}
        for p in [*shared, *(op.get("parameters") or [])]:
            p = schemas.deref(p)
            if isinstance(p, dict) and p.get("in") in ("path", "query", "header"):
                params[(p["in"], p.get("name"))] = p  # the operation's own win
        for (location, name), p in params.items():
            if not isinstance(name, str):
                continue
            arg = name if name not in props else f"{name}_{location}"
            schema = schemas.standalone(p.get("schema", {}), defs)
            if isinstance(p.get("description"), str) and isinstance(schema, dict):
                schema = {**schema, "description": p["description"]}
            props[arg] = schema
            self.where[arg] = (location, name)
            if p.get("required") or location == "path":
                required.append(arg)
        self.body_mode: str | None = None  # "merged": properties at the top; "body"
        body = schemas.deref(op.get("requestBody"))
        content = body.get("content") if isinstance(body, dict) else None
        media = content.get("application/json") if isinstance(content, dict) else None
        if isinstance(media, dict):
            schema = schemas.standalone(media.get("schema", {}), defs)
            target = _root(schema, defs)
            if isinstance(target, dict) and target.get("type") == "object" and isinstance(
                    target.get("properties"), dict):
                self.body_mode = "merged"
                for prop, sub in target["properties"].items():
                    arg = prop if prop not in props else f"{prop}_body"
                    props[arg] = sub
                    self.where[arg] = ("body", prop)
                    if prop in (target.get("required") or []) and body.get("required"):
                        required.append(arg)
            else:
                self.body_mode = "body"
                props["body"] = schema
                self.where["body"] = ("body", "")
                if body.get("required"):
                    required.append("body")
        self.input_schema: JSON = {"type": "object", "properties": props,
                                   "additionalProperties": False}
        if required:
            self.input_schema["required"] = required
        self.output_schema = self._output(schemas, op, defs)
        if defs:
            self.input_schema["$defs"] = defs
            if self.output_schema is not None:
                self.output_schema["$defs"] = defs
        self.annotations = {"readOnlyHint": method in ("get", "head"),
                            "destructiveHint": method == "delete",
                            "idempotentHint": method in ("get", "head", "put", "delete"),
                            "openWorldHint": True}

    @staticmethod
    def _output(schemas: _Schemas, op: JSON, defs: JSON) -> JSON | None:
        responses = op.get("responses")
        for status, answer in (responses.items() if isinstance(responses, dict) else ()):
            if not str(status).startswith("2"):
                continue
            answer = schemas.deref(answer)
            content = answer.get("content") if isinstance(answer, dict) else None
            media = content.get("application/json") if isinstance(content, dict) else None
            if not isinstance(media, dict) or "schema" not in media:
                return None
            schema = _root(schemas.standalone(media["schema"], defs), defs)
            if isinstance(schema, dict) and schema.get("type") == "object":
                return dict(schema)
            return None
        return None

    def request(self, arguments: JSON) -> tuple[str, JSON, JSON, Any]:
        """(url path, query, headers, JSON body or None) for ``arguments``."""
        path, query, headers = self.path, {}, {}
        body: Any = {} if self.body_mode == "merged" else None
        for arg, value in arguments.items():
            location, name = self.where[arg]
            if location == "path":
                path = path.replace("{" + name + "}", quote(str(value), safe=""))
            elif location == "query":
                query[name] = value
            elif location == "header":
                headers[name] = str(value)
            elif self.body_mode == "merged":
                body[name] = value
            else:
                body = value
        if body == {} and self.body_mode == "merged" and not any(
                loc == "body" for loc, _ in self.where.values()):
            body = None
        return path, query, headers, body


async def _send(client: httpx.AsyncClient, op: Operation, arguments: JSON) -> JSON:
    """Call ``op`` and answer a ``CallToolResult``."""
    import httpx

    path, query, headers, body = op.request(arguments)
    try:
        response = await client.request(op.method.upper(), path, params=query or None,
                                        headers=headers or None,
                                        json=body if body is not None else None)
    except httpx.HTTPError as exc:
        return _error(f"could not reach the API for {op.method.upper()} {op.path}: "
                      f"{type(exc).__name__}: {str(exc)[:200]}; try again later")
    text = response.text
    if response.status_code >= 400:
        return _error(f"the API answered {response.status_code} {response.reason_phrase} "
                      f"to {op.method.upper()} {path}: {text[:MAX_BODY_SHOWN]}")
    try:
        data = response.json() if text else None
    except ValueError:
        data = None
    result: JSON = {"content": [{"type": "text", "text": text[:100_000]}], "isError": False}
    if op.output_schema is not None and isinstance(data, dict):
        result["structuredContent"] = data
    return result


def _error(text: str) -> JSON:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def operations(doc: JSON, names: Mapping[str, str] | None = None) -> list[Operation]:
    """Every operation of ``doc``, in document order, with unique tool names (``names``
    renames by ``operationId`` first)."""
    schemas = _Schemas(doc)
    found: list[Operation] = []
    taken: dict[str, int] = {}
    for path, item in doc["paths"].items():
        item = schemas.deref(item)
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            operation = Operation(schemas, path, method, op, shared)
            if names and isinstance(operation.operation_id, str):
                operation.name = names.get(operation.operation_id, operation.name)
            count = taken.get(operation.name, 0) + 1
            taken[operation.name] = count
            if count > 1:
                operation.name = f"{operation.name}_{count}"
            found.append(operation)
    return found


def build(cls: type[Server], document: Mapping[str, Any] | str | PathLike[str],
          client: httpx.AsyncClient, *, name: str | None = None,
          names: Mapping[str, str] | None = None, route_maps: Iterable[RouteMap] = (),
          scheme: str = "api", **options: Any) -> Server:
    """A ``cls`` (a ``Server``) serving the document's operations through ``client``
    (module docstring); ``options``: any other ``Server`` option. Its name is the
    document's title unless ``name`` is given."""
    doc = load(document)
    info = doc.get("info")
    title = info.get("title") if isinstance(info, dict) else None
    server = cls(name or (title if isinstance(title, str) else "openapi"), **options)
    maps = list(route_maps)
    for op in operations(doc, names):
        kind = next((m.kind for m in maps if m.matches(op.method, op.path)), "tool")
        if kind == "exclude":
            continue
        if kind in ("resource", "template") and op.method == "get":
            only_path = all(loc == "path" for loc, _ in op.where.values())
            if kind == "resource" and not op.where:
                server.add_resource(_reader(client, op), f"{scheme}://{op.path.lstrip('/')}",
                                    name=op.name, description=op.description,
                                    mime_type="application/json")
                continue
            if kind == "template" and op.where and only_path:
                server._registry.add_readable(_template(client, op, scheme))
                continue
        server.add_tool(_caller(client, op), name=op.name, description=op.description,
                        input_schema=op.input_schema, output_schema=op.output_schema,
                        annotations=op.annotations,
                        structured_output=None if op.output_schema else False)
    return server


def build_asgi(cls: type[Server], app: Any, document: Mapping[str, Any] | None = None, *,
               base_url: str = "http://app", **options: Any) -> Server:
    """``build`` for a FastAPI or Starlette ``app`` in this process (its ``openapi()``
    when no document is given), called over httpx's ASGI transport."""
    import httpx

    if document is None:
        make = getattr(app, "openapi", None)
        if not callable(make):
            raise TypeError("the app has no openapi() (FastAPI has); pass its document")
        document = make()
    assert document is not None
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
    return build(cls, document, client, **options)


def _caller(client: httpx.AsyncClient, op: Operation) -> Callable[..., Any]:
    async def call(**arguments: Any) -> JSON:
        return await _send(client, op, arguments)
    return call


async def _read(client: httpx.AsyncClient, op: Operation, values: JSON) -> str:
    """A resource's or template's read: the API's answer as text (``ValueError`` for a
    failed call, with what the API said)."""
    result = await _send(client, op, values)
    text: str = result["content"][0]["text"]
    if result["isError"]:
        raise ValueError(text)
    return text


def _reader(client: httpx.AsyncClient, op: Operation) -> Callable[..., Any]:
    async def read() -> str:
        return await _read(client, op, {})
    return read


def _template(client: httpx.AsyncClient, op: Operation, scheme: str) -> Any:
    from .resources import ResourceTemplate

    async def read(**values: str) -> str:
        return await _read(client, op, values)
    return ResourceTemplate(read, f"{scheme}://{op.path.lstrip('/')}", name=op.name,
                            description=op.description, mime_type="application/json")
