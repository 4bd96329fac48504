"""Answering a server's elicitation from the command line.

A server may ask the person running ``mcpkit`` something while a command runs: in a
2025-era session with an ``elicitation/create`` request, in the 2026-07-28 revision with
an ``inputRequests`` entry of an ``input_required`` result (MRTR), and while a task runs
(either generation). The client routes all of them to one handler; this module is it.

- **On a terminal** (stdin is a TTY) the question is asked there: the server's message,
  then "fill in the form? [Y/n/c]" (accept / decline / cancel), then each field of the
  requested schema in turn — string (length and ``format``: email, uri, date, date-time),
  number, integer (bounds), boolean, single and multiple choice (``enum``, ``oneOf``,
  ``anyOf``, legacy ``enumNames``) — with its default offered, required fields insisted
  on and an invalid answer asked again (at most :data:`TRIES` times). A URL-mode request
  shows the URL and asks whether to accept (the person opens it themselves; nothing is
  opened for them). End of input (Ctrl-D) cancels.
- **Not on a terminal**, the request is declined, with a line on stderr saying what was
  asked and how to answer it next time: ``--elicit``.
- ``--elicit ANSWER`` answers every request without asking: ``decline``, ``cancel``,
  ``accept`` (a form with its defaults alone), a JSON object (accept with those values:
  each form takes the keys it asks for, so one object can answer several forms), or
  ``@FILE`` holding that object. An answer that does not fit the form (a required field
  missing, a value of the wrong type) cancels that request and says why.

Prompts and questions go to stderr, so stdout stays only the command's result (``--json``
output stays one JSON document). Every string from the server is shown through
:func:`~mcpkit.protocol.text.visible`, so it cannot drive the terminal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TextIO
from urllib.parse import urlparse

from ..protocol.text import visible

TRIES = 5
"""How many invalid answers to one field are asked again before the request is cancelled."""
MAX_FIELDS = 50
"""A form with more fields than this is not asked (it is cancelled, with a message)."""
PRESETS = ("ask", "accept", "decline", "cancel")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


class Cancelled(Exception):
    """The person ended the form (Ctrl-D, or too many invalid answers)."""


class Invalid(ValueError):
    """One answer does not fit its field; the message says what does."""


def parse_preset(value: str) -> str | dict[str, Any]:
    """The ``--elicit`` value: one of :data:`PRESETS`, or the JSON object to accept with
    (given inline or as ``@FILE``). Raises ``ValueError`` with what to give instead."""
    if value in PRESETS:
        return value
    text = value
    if value.startswith("@"):
        try:
            with open(value[1:], encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ValueError(f"--elicit {value}: cannot read {value[1:]}: {exc.strerror}"
                             ) from None
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--elicit takes ask, accept, decline, cancel, a JSON object or "
                         f"@FILE; {value[:40]!r} is none of them ({exc.msg})") from None
    if not isinstance(answer, dict):
        raise ValueError("--elicit JSON must be an object of field values, e.g. "
                         "'{\"confirm\": true}'")
    return answer


def _label(name: str, prop: dict[str, Any]) -> str | None:
    """A field's title and description, when it has either (else the prompt's name is
    all there is to show)."""
    title = prop.get("title") if isinstance(prop.get("title"), str) else None
    desc = prop.get("description") if isinstance(prop.get("description"), str) else None
    if not title and not desc:
        return None
    text = f"{title} ({name})" if title and title != name else name
    return visible(text + (f": {desc}" if desc else ""))


def choices(prop: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(value, label) of a single- or multiple-choice field, None for other fields."""
    items = prop.get("items") if prop.get("type") == "array" else None
    src = items if isinstance(items, dict) else prop
    options = src.get("oneOf") or src.get("anyOf")
    if isinstance(options, list):
        return [(str(o.get("const")), str(o.get("title", o.get("const"))))
                for o in options if isinstance(o, dict) and "const" in o]
    enum = src.get("enum")
    if isinstance(enum, list):
        names = src.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else enum
        return [(str(v), str(n)) for v, n in zip(enum, labels, strict=True)]
    return None


def convert(raw: str | list[str], prop: dict[str, Any]) -> Any:
    """The value of answer ``raw`` for field schema ``prop``; ``Invalid`` says why not.
    A multiple choice takes the choices comma-separated, or as a list (a preset)."""
    kind = prop.get("type")
    options = choices(prop)
    if options is not None and (kind == "array" or isinstance(raw, str)):
        parts = raw if isinstance(raw, list) else raw.split(",") if kind == "array" else [raw]
        picked = [_pick(str(part).strip(), options) for part in parts]
        if kind != "array":
            return picked[0]
        low, high = prop.get("minItems"), prop.get("maxItems")
        if isinstance(low, int) and len(picked) < low:
            raise Invalid(f"choose at least {low}")
        if isinstance(high, int) and len(picked) > high:
            raise Invalid(f"choose at most {high}")
        return list(dict.fromkeys(picked))
    if isinstance(raw, list):
        raise Invalid("a list answers only a multiple choice")
    if kind == "boolean":
        word = raw.strip().lower()
        if word in ("y", "yes", "true", "1"):
            return True
        if word in ("n", "no", "false", "0"):
            return False
        raise Invalid("answer y or n")
    if kind in ("integer", "number"):
        return _number(raw.strip(), kind, prop)
    if kind != "string":
        raise Invalid(f"mcpkit cannot ask for a field of type {kind!r}")
    _check_string(raw, prop)
    return raw


def _pick(raw: str, options: list[tuple[str, str]]) -> str:
    if raw.isdigit() and 1 <= int(raw) <= len(options):
        return options[int(raw) - 1][0]
    for value, label in options:
        if raw in (value, label):
            return value
    raise Invalid(f"answer a number from 1 to {len(options)}, or one of the values")


def _number(raw: str, kind: str, prop: dict[str, Any]) -> float | int:
    try:
        value: float | int = int(raw) if kind == "integer" else float(raw)
    except ValueError:
        raise Invalid("answer a whole number" if kind == "integer" else "answer a number"
                      ) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid("answer a finite number")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(low, int | float) and value < low:
        raise Invalid(f"answer {low:g} or more")
    if isinstance(high, int | float) and value > high:
        raise Invalid(f"answer {high:g} or less")
    return value


def _check_string(raw: str, prop: dict[str, Any]) -> None:
    low, high = prop.get("minLength"), prop.get("maxLength")
    if isinstance(low, int) and len(raw) < low:
        raise Invalid(f"at least {low} characters")
    if isinstance(high, int) and len(raw) > high:
        raise Invalid(f"at most {high} characters")
    fmt = prop.get("format")
    try:
        if fmt == "date":
            date.fromisoformat(raw)
        elif fmt == "date-time":
            if datetime.fromisoformat(raw.replace("Z", "+00:00")).tzinfo is None:
                raise ValueError
    except ValueError:
        raise Invalid("a date like 2026-07-28" if fmt == "date" else
                      "a date and time with its offset, like 2026-07-28T09:30:00Z") from None
    if fmt == "email" and not _EMAIL.fullmatch(raw):
        raise Invalid("an email address, like ada@example.com")
    if fmt == "uri" and not (urlparse(raw).scheme and ":" in raw):
        raise Invalid("an absolute URI, like https://example.com/x")


def _fields(schema: Any) -> tuple[dict[str, dict[str, Any]], set[str]]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = {k: v for k, v in (props or {}).items() if isinstance(v, dict)}
    required = schema.get("required") if isinstance(schema, dict) else None
    return props, {r for r in (required or []) if isinstance(r, str)}


def fill(schema: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The content a preset ``--elicit`` object gives a form: the form's own keys from
    ``given`` (defaults fill the rest); ``Invalid`` when a value does not fit its field
    or a required field has neither."""
    props, required = _fields(schema)
    content: dict[str, Any] = {}
    for name, prop in props.items():
        if name in given:
            value = given[name]
            try:
                content[name] = (convert(value, prop) if isinstance(value, str | list)
                                 else _typed(value, prop))
            except Invalid as exc:
                raise Invalid(f"{name!r}: {exc}") from None
        elif "default" in prop:
            content[name] = prop["default"]
        elif name in required:
            raise Invalid(f"{name!r} is required and has no default; add it to the answer")
    return content


def _typed(value: Any, prop: dict[str, Any]) -> Any:
    """A non-string preset value, checked against its field."""
    kind = prop.get("type")
    if kind == "boolean" and isinstance(value, bool):
        return value
    if (kind in ("integer", "number") and isinstance(value, int | float)
            and not isinstance(value, bool)):
        return _number(str(value), kind, prop)
    raise Invalid(f"{json.dumps(value)} is not a {kind}")


class Asker:
    """The CLI's elicitation handler (see the module docstring). ``waiting`` is told when
    a question opens (True) and closes (False), so that ``--timeout`` counts the server's
    time only; ``before`` runs before anything is shown (it ends a progress line drawn in
    place). Questions that arrive together are asked one after the other."""

    def __init__(self, preset: str | dict[str, Any], stdin: TextIO, out: TextIO,
                 before: Callable[[], None] | None = None) -> None:
        self.preset = preset
        self.stdin, self.out = stdin, out
        self.interactive = preset == "ask" and stdin.isatty()
        self.waiting: Callable[[bool], None] | None = None
        self.before = before
        self._turn: Any = None  # an anyio.Lock, made in the event loop on first use

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        import anyio

        if not self.interactive:
            if self.before is not None:
                self.before()
            return self._preset(params)
        if self.waiting is not None:
            self.waiting(True)
        try:
            self._turn = self._turn or anyio.Lock()
            async with self._turn:
                if self.before is not None:
                    self.before()
                return await anyio.to_thread.run_sync(self._ask, params,
                                                      abandon_on_cancel=True)
        finally:
            if self.waiting is not None:
                self.waiting(False)

    def _say(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _preset(self, params: dict[str, Any]) -> dict[str, Any]:
        message = visible(str(params.get("message", "")))
        url = params.get("mode") == "url"
        where = f" ({visible(str(params.get('url')))})" if url else ""
        if self.preset == "ask":
            self._say(f"mcpkit: the server asks: {message}{where}\n"
                      "mcpkit: declined: stdin is not a terminal; answer with --elicit "
                      "accept|decline|cancel|JSON|@FILE (see mcpkit call --help)\n")
            return {"action": "decline"}
        if isinstance(self.preset, str) and (self.preset != "accept" or url):
            self._say(f"mcpkit: the server asks: {message}{where}; --elicit "
                      f"{self.preset}\n")
            return {"action": self.preset}
        if url:
            self._say(f"mcpkit: the server asks you to open {where.strip(' ()')}: "
                      f"{message}; --elicit accepts\n")
            return {"action": "accept"}
        given = self.preset if isinstance(self.preset, dict) else {}
        try:
            content = fill(params.get("requestedSchema"), given)
        except Invalid as exc:
            self._say(f"mcpkit: the server asks: {message}\nmcpkit: cancelled: the --elicit "
                      f"answer does not fit its form: {exc}\n")
            return {"action": "cancel"}
        return {"action": "accept", "content": content}

    def _line(self, prompt: str) -> str:
        self._say(prompt)
        line = self.stdin.readline()
        if not line:
            self._say("\n")
            raise Cancelled("end of input")
        return line.rstrip("\r\n")

    def _ask(self, params: dict[str, Any]) -> dict[str, Any]:
        self._say(f"\nThe server asks: {visible(str(params.get('message', '')))}\n")
        try:
            if params.get("mode") == "url":
                return self._ask_url(str(params.get("url")))
            props, required = _fields(params.get("requestedSchema"))
            if len(props) > MAX_FIELDS:
                self._say(f"mcpkit: cancelled: the form has {len(props)} fields; mcpkit "
                          f"asks at most {MAX_FIELDS}\n")
                return {"action": "cancel"}
            action = self._action("Fill in the form? [Y]es / [n]o, decline / [c]ancel: ")
            if action != "accept":
                return {"action": action}
            self._say("  (Enter takes the [default]; Ctrl-D cancels)\n")
            content: dict[str, Any] = {}
            for name, prop in props.items():
                value = self._field(name, prop, name in required)
                if value is not None:
                    content[name] = value
            return {"action": "accept", "content": content}
        except Cancelled as exc:
            self._say(f"mcpkit: cancelled ({exc})\n")
            return {"action": "cancel"}

    def _ask_url(self, url: str) -> dict[str, Any]:
        host = urlparse(url).hostname or "?"
        self._say(f"  URL: {visible(url)}\n  (on {visible(host)}; mcpkit does not open it "
                  "for you)\n")
        return {"action": self._action("Accept and open it yourself? [Y]es / [n]o, "
                                       "decline / [c]ancel: ")}

    def _action(self, prompt: str) -> str:
        for _ in range(TRIES):
            word = self._line(prompt).strip().lower()
            if word in ("", "y", "yes", "a", "accept"):
                return "accept"
            if word in ("n", "no", "d", "decline"):
                return "decline"
            if word in ("c", "cancel"):
                return "cancel"
            self._say("  answer y, n or c\n")
        raise Cancelled(f"{TRIES} answers that were not y, n or c")

    def _field(self, name: str, prop: dict[str, Any], required: bool) -> Any:
        """Ask one field until its answer fits; None for an optional field left empty."""
        options = choices(prop)
        label = _label(name, prop)
        if label is not None:
            self._say(f"  {label}\n")
        if options is not None:
            for i, (_, label) in enumerate(options, 1):
                self._say(f"    {i}) {visible(label)}\n")
        default = prop.get("default")
        hint = _hint(prop, options)
        shown = "" if default is None else f" [{visible(_show(default))}]"
        need = "required" if required else "optional"
        for _ in range(TRIES):
            raw = self._line(f"  {name} ({hint}, {need}){shown}: ")
            if raw == "":
                if default is not None:
                    return default
                if not required:
                    return None
                self._say("    a value is required\n")
                continue
            try:
                return convert(raw, prop)
            except Invalid as exc:
                self._say(f"    {exc}\n")
        raise Cancelled(f"{TRIES} answers to {name!r} that did not fit")


def _hint(prop: dict[str, Any], options: list[tuple[str, str]] | None) -> str:
    kind = prop.get("type")
    if options is not None:
        return "numbers or values, comma-separated" if kind == "array" else "a number or value"
    if kind == "boolean":
        return "y/n"
    if kind == "string" and isinstance(prop.get("format"), str):
        return str(prop["format"])
    return str(kind)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
