"""Judges of the authorization rows a server shows (1.3: M030, M031, M037, M038, S008,
S009, S010, S011, A016), from the probes of :mod:`~mcpkit.check.authprobe`.

The rows that bind the client (M032-M036, S012) are untestable in :mod:`mcpkit.check.matrix`. Every
row here is n/a for a server that does not ask for credentials (authorization is optional
in MCP) and, but for S009, for a stdio server. A judgement lists every problem seen, each
saying what to change, and the exchanges that show it.
"""

from __future__ import annotations

from ..authprobe import (
    AuthFacts,
    Exchange,
    ServerMetadata,
    canonical,
    parse_bearer,
    secure_or_loopback,
)
from ..facts import Facts
from .common import Judge, Judgement, na

NOT_HTTP = "Not an HTTP server: MCP authorization is for HTTP transports."


def _unprotected(a: AuthFacts) -> str:
    ex = a.no_credentials
    seen = f"HTTP {ex.status}" if ex.status is not None else f"no answer ({ex.error})"
    return (f"A request without credentials got {seen}, not 401: the server does not require "
            "authorization, so the authorization rows do not apply.")


def _auth(facts: Facts) -> AuthFacts | Judgement:
    """The probes' facts of a protected server, or the n/a judgement."""
    a = facts.auth
    if facts.transport != "http" or a is None:
        return na(NOT_HTTP)
    if not a.protected:
        return na(_unprotected(a))
    return a


def _evidence(*exchanges: Exchange | None) -> str:
    return "\n".join(ex.evidence for ex in exchanges if ex is not None)


def _verdict(problems: list[str], ok: str, evidence: str) -> Judgement:
    if problems:
        return ("fail", " ".join(problems), evidence)
    return ("pass", ok, evidence)


def M030(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    ex = a.no_credentials
    if ex.status == 401:
        return ("pass", "A request without credentials got 401.", ex.evidence)
    return ("fail", f"A request without credentials got {ex.status} with a Bearer challenge; "
            "answer 401 when credentials are missing (403 is for a valid token that lacks "
            "a scope).", ex.evidence)


def _server_notes(servers: list[ServerMetadata]) -> tuple[list[str], list[str]]:
    problems, notes = [], []
    for s in servers:
        if s.document is None:
            notes.append(f"the metadata of {s.issuer} was not checked ({s.problem})")
            continue
        methods = s.document.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            problems.append(
                f"The authorization server {s.issuer} ({s.url}) does not list S256 in "
                f"code_challenge_methods_supported (it has {methods!r}): MCP clients MUST "
                "refuse an authorization server without PKCE S256; advertise it.")
        else:
            notes.append(f"{s.issuer} offers PKCE S256")
    return problems, notes


def M031(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    problems: list[str] = []
    if not secure_or_loopback(a.url):
        problems.append(f"The endpoint {a.url} is plain http off loopback: serve it over "
                        "https (bearer tokens would travel in clear).")
    evidence = _evidence(a.no_credentials, *a.prm_tries,
                         *[t for s in a.servers for t in s.tries])
    if a.prm is None:
        tried = ", ".join(ex.url for ex in a.prm_tries)
        problems.append(f"No protected resource metadata (RFC 9728) was found (tried {tried}): "
                        "serve it at a well-known URL and name it in the 401 challenge's "
                        "resource_metadata; without it no client can find the authorization "
                        "server.")
        return ("fail", " ".join(problems), evidence)
    resource = a.prm.get("resource")
    if not isinstance(resource, str):
        problems.append(f"The metadata at {a.prm_url} has no resource member: set it to "
                        f"this server's URL {canonical(a.url)!r} (RFC 9728 §2).")
    elif canonical(resource) != canonical(a.url):
        problems.append(f"The metadata's resource {resource!r} is not the URL of this server "
                        f"{canonical(a.url)!r}: RFC 9728 §3.3 makes clients refuse the "
                        "metadata, so no client can get a token for this server; set resource "
                        "to the URL clients use.")
    if not secure_or_loopback(a.prm_url):
        problems.append(f"The metadata is served over plain http ({a.prm_url}): use https.")
    servers = a.prm.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(
            isinstance(s, str) for s in servers):
        problems.append(f"The metadata's authorization_servers is {servers!r}: list at least "
                        "one issuer URL (MCP requires it).")
    else:
        problems += [f"The authorization server {s!r} is not an https URL: issuers MUST use "
                     "https." for s in servers if not secure_or_loopback(s)]
    as_problems, notes = _server_notes(a.servers)
    problems += as_problems
    ok = (f"Metadata at {a.prm_url}: resource {resource!r} is this server, authorization "
          f"servers {servers!r}" + "".join(f"; {n}" for n in notes) + ".")
    return _verdict(problems, ok, evidence)


def M037(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    ex = a.query_token
    assert ex is not None
    what = "the token given" if a.query_token_was_real else "a made-up token"
    if ex.accepted:
        return ("fail", f"A request carrying {what} as access_token in the query string (and "
                f"no Authorization header) was accepted (HTTP {ex.status}): refuse it with 400 "
                "invalid_request; tokens in URLs leak into logs and histories.", ex.evidence)
    if ex.status is None or ex.status >= 500:
        seen = f"HTTP {ex.status}" if ex.status is not None else f"no answer ({ex.error})"
        return ("fail", f"A token in the query string got {seen}: refuse it with 400 "
                "invalid_request (or 401).", ex.evidence)
    hint = "" if a.query_token_was_real else (
        " Only a made-up token could be tried; with --token the checker puts the real one "
        "in the query string.")
    return ("pass", f"A token in the query string was refused with HTTP {ex.status}.{hint}",
            ex.evidence)


def _refused_401(ex: Exchange, what: str, accepted: str) -> str | None:
    """The problem with ``ex`` (a request with an invalid token), or None for a 401."""
    if ex.status == 401:
        return None
    if ex.accepted:
        return f"{what} was accepted (HTTP {ex.status}): {accepted}"
    seen = f"HTTP {ex.status}" if ex.status is not None else f"no answer ({ex.error})"
    return f"{what} got {seen}: answer 401 (with error=\"invalid_token\") for an invalid token."


def M038(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    problems: list[str] = []
    notes: list[str] = []
    for ex in a.malformed:
        if ex.accepted:
            problems.append(f"A malformed header ({ex.label}) was accepted (HTTP {ex.status}): "
                            "refuse it with 400 invalid_request.")
        elif ex.status not in (400, 401):
            seen = f"HTTP {ex.status}" if ex.status is not None else f"no answer ({ex.error})"
            problems.append(f"A malformed header ({ex.label}) got {seen}: answer 400 "
                            "invalid_request (or 401), never an error of the server.")
    assert a.junk is not None
    junk = _refused_401(a.junk, "A made-up token", "the server does not validate tokens.")
    problems += [junk] if junk else []
    if a.with_token is not None and a.corrupted is not None:
        if a.with_token.status in (401, 403):
            notes.append(f"the token given was refused (HTTP {a.with_token.status}: expired, "
                         "for another server or without a scope?), so a valid token could not "
                         "be compared with a corrupted one")
        else:
            notes.append(f"the token given was accepted (HTTP {a.with_token.status})")
            bad = _refused_401(a.corrupted, "A copy of the token given with one signature "
                               "character changed", "its signature is not verified.")
            problems += [bad] if bad else []
    else:
        notes.append("pass --token to check that a valid token is accepted and a corrupted "
                     "copy refused")
    if a.wrong_audience is not None:
        bad = _refused_401(a.wrong_audience, "A token issued for another audience",
                           "check the token's audience (aud) against this server's URL (RFC "
                           "8707); accepting other services' tokens is token passthrough, "
                           "the confused deputy.")
        problems += [bad] if bad else []
    # the exchanges that show a problem first, the rest after (evidence is trimmed)
    shown = [a.wrong_audience, a.corrupted, a.junk, *a.malformed, a.with_token]
    evidence = _evidence(*sorted((ex for ex in shown if ex is not None),
                                 key=lambda ex: ex.status == 401 or ex.status == 400))
    ok = ("Malformed Authorization headers got 400/401, a made-up token 401"
          + (", the corrupted token 401" if a.corrupted is not None
             and a.with_token is not None and a.with_token.status not in (401, 403) else "")
          + (", the wrong-audience token 401" if a.wrong_audience is not None else "")
          + "".join(f"; {n}" for n in notes) + ".")
    return _verdict(problems, ok, evidence)


def _forbidden(facts: Facts, a: AuthFacts) -> list[tuple[str, str]]:
    """``(WWW-Authenticate, evidence)`` of every 403 with a challenge the probes saw."""
    out = []
    for r in facts.log.http_replies:
        if r.http is not None and r.http.status == 403 and "www-authenticate" in r.http.headers:
            out.append((r.http.headers["www-authenticate"], r.evidence))
    for ex in (a.with_token, a.no_credentials):
        if ex is not None and ex.status == 403 and "www-authenticate" in ex.headers:
            out.append((ex.headers["www-authenticate"], ex.evidence))
    return out


def S008(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    first = a.no_credentials
    challenge = first.challenge
    if challenge is None:
        return ("fail", f"The {first.status} carries no WWW-Authenticate: Bearer challenge: "
                "answer with one naming the metadata (resource_metadata=\"...\") and the "
                "scopes needed (RFC 6750 §3, RFC 9728 §5.1).", first.evidence)
    problems: list[str] = []
    notes: list[str] = []
    named = challenge.get("resource_metadata")
    if not named:
        problems.append("The 401 challenge has no resource_metadata: add "
                        "resource_metadata=\"<metadata URL>\" (MCP 2025-06-18 requires it; "
                        "later clients fall back to well-known URLs).")
    elif a.prm_url != named:
        problems.append(f"The challenge's resource_metadata {named!r} did not serve the "
                        "metadata: name the URL it is served at.")
    if challenge.get("scope"):
        notes.append(f"scope=\"{challenge['scope']}\"")
    else:
        notes.append("no scope parameter (naming the scopes needed is recommended)")
    if a.junk is not None and a.junk.status == 401:
        error = (a.junk.challenge or {}).get("error")
        if error != "invalid_token":
            problems.append(f"The 401 for an invalid token says error={error!r}: say "
                            "error=\"invalid_token\" (RFC 6750 §3.1) so a client gets a new "
                            "token instead of asking the user again.")
    evidence = [first.evidence, a.junk.evidence if a.junk else ""]
    for header, shown in _forbidden(facts, a):
        params = parse_bearer(header) or {}
        missing = [k for k in ("scope", "resource_metadata") if not params.get(k)]
        if params.get("error") != "insufficient_scope" or missing:
            problems.append(f"A 403 challenge {header!r} lacks "
                            + ", ".join(['error="insufficient_scope"'] * (
                                params.get("error") != "insufficient_scope") + missing)
                            + ": name the error, every scope the request needs and the "
                            "metadata URL, so the client can step up.")
            evidence.append(shown)
        else:
            notes.append("403 insufficient_scope challenges name the scope and metadata")
    ok = f"401 with a Bearer challenge naming the metadata; {'; '.join(notes)}."
    return _verdict(problems, ok, "\n".join(e for e in evidence if e))


def S009(facts: Facts) -> Judgement:
    if facts.transport != "stdio":
        return na("Not a stdio server.")
    return ("pass", "The stdio server served without credentials on the wire (it takes any "
            "from its environment).", facts.init.evidence if facts.init else "")


def _documents(facts: Facts) -> list[ServerMetadata] | Judgement:
    """The authorization servers whose metadata could be read, or the judgement that
    there is nothing to judge (no auth probe, no server named, none readable)."""
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    found = [s for s in a.servers if s.document is not None]
    if found:
        return found
    if not a.servers:
        return ("untestable", "No authorization server is named in readable metadata (see "
                "M031).", "")
    reasons = "; ".join(f"{s.issuer}: {s.problem}" for s in a.servers)
    return ("untestable", f"No authorization server metadata could be read ({reasons}).",
            _evidence(*[t for s in a.servers for t in s.tries]))


def S010(facts: Facts) -> Judgement:
    found = _documents(facts)
    if not isinstance(found, list):
        return found
    ways = []
    for s in found:
        doc = s.document or {}
        kinds = (["dynamic registration"] if doc.get("registration_endpoint") else []) + (
            ["client ID metadata documents"]
            if doc.get("client_id_metadata_document_supported") is True else [])
        if kinds:
            ways.append(f"{s.issuer} ({', '.join(kinds)})")
    evidence = _evidence(*[s.tries[-1] for s in found])
    if not ways:
        return ("fail", "No authorization server offers a way for a new client to register: "
                "no registration_endpoint (RFC 7591) and no "
                "client_id_metadata_document_supported; offer client ID metadata documents "
                "(or dynamic registration), or clients need credentials made by hand.",
                evidence)
    return ("pass", "Registration offered by " + "; ".join(ways) + ".", evidence)


def S011(facts: Facts) -> Judgement:
    a = _auth(facts)
    if not isinstance(a, AuthFacts):
        return a
    found = [s for s in a.servers if s.document is not None]
    missing = [s for s in a.servers if s.document is None and s.reachable]
    evidence = _evidence(*[t for s in a.servers for t in s.tries])
    if missing:
        return ("fail", "; ".join(f"The authorization server {s.issuer} answered but serves "
                                  f"no usable metadata ({s.problem})" for s in missing)
                + ": serve RFC 8414 metadata (or OpenID discovery) whose issuer is exactly "
                "the issuer named.", evidence)
    if found:
        return ("pass", "Authorization server metadata found: " + ", ".join(
            s.url for s in found) + ".", evidence)
    docs = _documents(facts)
    assert not isinstance(docs, list)
    return docs


def A016(facts: Facts) -> Judgement:
    found = _documents(facts)
    if not isinstance(found, list):
        return found
    dcr = [s for s in found if s.document and s.document.get("registration_endpoint")]
    if dcr:
        return ("pass", "Dynamic client registration offered: " + ", ".join(
            str(s.document.get("registration_endpoint")) for s in dcr if s.document) + ".",
            _evidence(*[s.tries[-1] for s in dcr]))
    return na("A permission: no authorization server offers dynamic client registration.")


JUDGES: dict[str, Judge] = {
    "M030": M030, "M031": M031, "M037": M037, "M038": M038, "S008": S008, "S009": S009,
    "S010": S010, "S011": S011, "A016": A016,
}
"""The rows of this module -> their judges."""
