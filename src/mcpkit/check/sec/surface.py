"""Security lint of what a server exposes: secrets, risky parameters, open HTTP endpoints.

* ``SEC.secrets``: a private key or a live-looking API key in a definition, the
  instructions, or anything a tool, resource or prompt returned (the model may repeat it,
  and every host log keeps it). Patterns are the providers' documented formats; the
  documentation examples (``AKIAIOSFODNN7EXAMPLE``), placeholders (``sk-xxxx``) and public
  keys do not count. Evidence shows only the first characters of a secret.
* ``SEC.unconstrained-input``: a string parameter that takes a shell command, a file path
  or a URL with no ``enum``, ``const`` or ``pattern`` restricting it: command-injection,
  path-traversal and SSRF surface (OWASP; the spec's security best practices). Known by
  its name (``command``, ``file_path``, ``url``, ...); not ``uri``, which in MCP usually
  names a resource of the server itself.
* ``SEC.open-http``: a server reached over HTTP at an address beyond loopback that answers
  without credentials (the spec's transport security warning: servers bound beyond
  localhost must authenticate; authorization spec).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ...auth.urls import is_loopback_host
from ..lint.common import Outcome, name_list, quantity, shorten, to_json
from .common import SecInput, definition_texts, label, output_texts

_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----"
        r"\s*[A-Za-z0-9+/=\s:,-]{40,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}\b|\bgithub_pat_\w{60,}")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{20,}")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{24,}")),
)
_PLACEHOLDER = re.compile(r"example|x{6,}|0{8,}|\*{4,}|\.{3}|your[_-]", re.IGNORECASE)


def _live(secret: str) -> bool:
    """Whether a pattern match looks real: no placeholder text, and it mixes letters and
    digits over more than 12 distinct characters (a real key does; ``sk-aaaa…`` does not)."""
    if _PLACEHOLDER.search(secret):
        return False
    if secret.startswith("-----BEGIN"):
        return True
    return (any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)
            and len(set(secret)) > 12)


def redact(secret: str) -> str:
    """The first characters of a secret and its length; never the secret itself."""
    head = secret[:14] if secret.startswith("-----") else secret[:6]
    return f"{head}… ({len(secret)} characters, redacted)"


def _check_secrets(data: SecInput) -> Outcome:
    """Private keys and API keys of the formats above in definitions, instructions and
    every result the probes received (tool calls, resource reads, prompts)."""
    texts = [*definition_texts(data), *output_texts(data)]
    if not texts:
        return "n/a", "No definitions, instructions or results to judge.", ""
    hits: list[tuple[str, str, str]] = []
    for where, text in texts:
        for what, pattern in _SECRETS:
            m = next((m for m in pattern.finditer(text) if _live(m.group(0))), None)
            if m is not None:
                hits.append((where, what, redact(m.group(0))))
                break
    if not hits:
        return "pass", f"No private or API keys in {quantity(len(texts), 'text')}.", ""
    shown = [f"{where} ({what})" for where, what, _ in hits]
    return ("fail", f"Secrets in {len(hits)} of {len(texts)} texts: {name_list(shown)}. "
            "Whatever a server shows the model can end up in its answers and in host logs; "
            "revoke these keys and keep secrets out of definitions and results.",
            {where: f"{what}: {shown_secret}" for where, what, shown_secret in hits[:8]})


_SHELL = frozenset({"command", "cmd", "shell", "script", "exec", "shell_command",
                    "command_line", "cmdline", "bash", "powershell"})
_PATH = frozenset({"path", "file", "filename", "filepath", "file_path", "file_name", "dir",
                   "directory", "folder", "dirpath", "dir_path", "pathname"})
_URL = frozenset({"url", "endpoint", "href", "link", "webhook", "webhook_url",
                  "callback_url", "target_url", "base_url", "fetch_url", "image_url"})
_NOT_FS = frozenset({"json", "jq", "key", "field", "object", "property", "attribute", "xpath",
                     "css", "api", "route", "url", "query"})
_CONSTRAINED = ("enum", "const", "pattern", "$ref", "anyOf", "oneOf", "allOf")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower()


def _surface(name: str, schema: dict[str, Any]) -> str | None:
    """What a parameter takes (``a shell command``, ``a file path``, ``a URL``) when its
    name or format says so; None otherwise."""
    snake = _snake(name)
    parts = snake.split("_")
    if snake in _SHELL or parts[-1] in {"command", "cmd"}:
        return "a shell command"
    if snake in _URL or parts[-1] == "url":
        return "a URL"
    if (snake in _PATH or parts[-1] in {"path", "file", "dir", "directory", "filename"}) and (
            len(parts) == 1 or parts[-2] not in _NOT_FS):
        return "a file path"
    return None


def _strings(schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    types = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()
    return "string" in types and types <= {"string", "null"}


def _check_unconstrained(data: SecInput) -> Outcome:
    """Top-level string parameters of tools (and prompt arguments) named for a shell command,
    a file path or a URL, with no ``enum``/``const``/``pattern`` (nor a composition or
    ``$ref`` that may restrict them). ``maxLength`` and ``format`` restrict nothing an
    attacker cares about. ``uri`` is left out: in MCP it usually names one of the server's
    own resources (the official SDK's example has one), not a place to fetch."""
    params: list[tuple[str, str, str, Any]] = []
    total = 0
    for i, tool in enumerate(data.tools):
        schema = tool.get("inputSchema") if isinstance(tool, dict) else None
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict):
            continue
        for name, prop in props.items():
            if not isinstance(name, str) or not isinstance(prop, dict):
                continue
            total += 1
            what = _surface(name, prop)
            if (what and _strings(prop) and not any(k in prop for k in _CONSTRAINED)):
                params.append((label("tool", i, tool), name, what, prop))
    if total == 0:
        return "n/a", "No tool parameter to judge.", ""
    if not params:
        return ("pass", f"No unconstrained command, path or URL parameter among "
                f"{quantity(total, 'parameter')}.", "")
    shown = [f"{where}.{name} ({what})" for where, name, what, _ in params]
    return ("fail", f"Unconstrained command, path or URL parameters in {len(params)} of "
            f"{quantity(total, 'parameter')}: "
            f"{name_list(shown)}. Whatever the model (or a prompt injected into it) puts there "
            "is run, opened or fetched: restrict it with an enum or a pattern (a fixed "
            "directory, an allowed host), or take the parts as separate parameters.",
            [{"where": where, "parameter": name, "takes": what, "schema": prop}
             for where, name, what, prop in params[:8]])


def _check_open_http(data: SecInput) -> Outcome:
    """An HTTP server at a host that is not loopback (``localhost``, 127.0.0.0/8, ``::1``)
    that did not refuse a request without credentials."""
    if data.url is None:
        return "n/a", "The server runs over stdio, reachable only by the host that started it.", ""
    host = urlsplit(data.url).hostname or ""
    if is_loopback_host(host):
        return "pass", f"The server is reached at loopback ({host}).", ""
    if data.protected is None:
        return "untestable", "The authorization probe did not run.", ""
    if data.protected:
        return "pass", f"The server at {host} refuses requests without credentials.", ""
    return ("fail", f"The server at {shorten(host)} (beyond loopback) answers without any "
            "credentials: anyone who can reach the address can use its tools. Require "
            "authorization (OAuth 2.1, the spec's authorization section) or bind to 127.0.0.1.",
            f"POST {data.url} without Authorization was served")


def _check_silent_change(data: SecInput) -> Outcome:
    """Two ``tools/list`` calls of one session: every tool listed in both (by name, first
    occurrence) has the same definition (canonical JSON), unless the server announced the
    change with ``notifications/tools/list_changed``. Tools in one listing only and the
    order are ``LIST.deterministic-order``'s business."""
    if data.second_tools is None:
        return "n/a", "tools/list was not answered twice.", ""
    first = {t["name"]: t for t in reversed(data.tools)
             if isinstance(t, dict) and isinstance(t.get("name"), str)}
    second = {t["name"]: t for t in reversed(data.second_tools)
              if isinstance(t, dict) and isinstance(t.get("name"), str)}
    both = [n for n in first if n in second]
    changed = [n for n in both if to_json(first[n], canonical=True)
               != to_json(second[n], canonical=True)]
    if not changed:
        return "pass", f"{quantity(len(both), 'tool')} identical in two listings.", ""
    if data.announced:
        return ("pass", f"{quantity(len(changed), 'tool')} changed between two listings, "
                "announced with notifications/tools/list_changed.", "")
    keys = {n: sorted(k for k in set(first[n]) | set(second[n])
                      if to_json(first[n].get(k), canonical=True)
                      != to_json(second[n].get(k), canonical=True)) for n in changed}
    shown = [f"{shorten(n)} ({', '.join(keys[n])})" for n in changed]
    return ("fail", f"{quantity(len(changed), 'tool')} changed between two tools/list calls of "
            f"one session without notifications/tools/list_changed: {name_list(shown)}. A "
            "definition that changes behind the host's back is how a rug pull reaches the "
            "model; keep definitions fixed, or announce the change.",
            {n: {"first": {k: first[n].get(k) for k in keys[n]},
                 "second": {k: second[n].get(k) for k in keys[n]}} for n in changed[:4]})


CHECKS: dict[str, Callable[[SecInput], Outcome]] = {
    "SEC.silent-change": _check_silent_change,
    "SEC.secrets": _check_secrets,
    "SEC.unconstrained-input": _check_unconstrained,
    "SEC.open-http": _check_open_http,
}
"""The ``SEC.*`` rules of this module -> their checks."""
