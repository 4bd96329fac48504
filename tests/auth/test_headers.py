"""The pure parts of the resource server: the ``Authorization`` header (RFC 6750 §2.1),
``WWW-Authenticate`` challenges (§3), canonical resource URIs, well-known URLs and the
Protected Resource Metadata document (RFC 9728). No I/O."""

from __future__ import annotations

import pytest

from mcpkit.auth import (
    MalformedAuthorization,
    ProtectedResource,
    bearer_challenge,
    canonical_resource_uri,
    insufficient_scope,
    invalid_request,
    parse_authorization,
    parse_credentials,
    protected_resource_metadata_urls,
    unauthorized,
)
from mcpkit.auth.urls import authorization_server_metadata_urls, is_loopback_host

# ------------------------------------------------------------------ Authorization


@pytest.mark.parametrize("value, token", [
    (None, None),
    ("Bearer abc.DEF-123_~+/", "abc.DEF-123_~+/"),
    ("bearer abc", "abc"),
    ("BEARER abc==", "abc=="),
    ("Bearer    abc", "abc"),
    (" Bearer abc ", "abc"),
    ("Basic dXNlcjpwdw==", None),
    ("Digest username=x", None),
])
def test_authorization_accepted(value: str | None, token: str | None) -> None:
    assert parse_authorization(value) == token


@pytest.mark.parametrize("value, reason", [
    ("Bearer", "no bearer token"),
    ("Bearer ", "no bearer token"),
    ("", "not 'Bearer <token>'"),
    ("Bearer a b", "exactly one token"),
    ("Bearer a, Bearer b", "exactly one token"),
    ("Bearer a\tb", "exactly one token"),
    ("Bearer abc=def", "does not allow"),
    ("Bearer a<b>", "does not allow"),
    ("Bearer \"abc\"", "does not allow"),
    ("Bearer tök", "does not allow"),
    ("Bearer\tabc", "not 'Bearer <token>'"),
    ("=Bearer abc", "not 'Bearer <token>'"),
])
def test_authorization_malformed(value: str, reason: str) -> None:
    with pytest.raises(MalformedAuthorization) as info:
        parse_authorization(value)
    assert reason in info.value.description
    assert (info.value.status, info.value.error) == (400, "invalid_request")
    token = value.partition(" ")[2].strip()
    assert not token or token not in info.value.description


# ------------------------------------------------------------------ challenges

PRM = "https://h.example/.well-known/oauth-protected-resource/mcp"


def test_challenge_without_token() -> None:
    assert unauthorized(PRM, ["notes:read", "notes:write"]) == (
        f'Bearer scope="notes:read notes:write", resource_metadata="{PRM}"')
    assert unauthorized(PRM) == f'Bearer resource_metadata="{PRM}"'


def test_challenge_for_a_refused_token() -> None:
    assert unauthorized(PRM, ["a"], "the token has expired") == (
        f'Bearer error="invalid_token", scope="a", resource_metadata="{PRM}", '
        'error_description="the token has expired"')


def test_insufficient_scope_and_invalid_request() -> None:
    assert insufficient_scope(PRM, ["notes:write", "notes:read"]) == (
        f'Bearer error="insufficient_scope", scope="notes:write notes:read", '
        f'resource_metadata="{PRM}"')
    assert invalid_request(PRM, "bad header") == (
        f'Bearer error="invalid_request", resource_metadata="{PRM}", '
        'error_description="bad header"')


def test_challenge_quoting() -> None:
    value = bearer_challenge(error="invalid_token",
                             error_description='say "hi" \\ to\r\nnext: ü',
                             resource_metadata='https://h/a"b\\c')
    assert value == ('Bearer error="invalid_token", resource_metadata="https://h/a\\"b\\\\c", '
                     'error_description="say ?hi? ? to??next: ?"')
    assert bearer_challenge() == "Bearer"
    assert bearer_challenge(scopes=["a", "a", "b"]) == 'Bearer scope="a b"'
    for bad in (["two words"], ['quo"te'], ["back\\slash"], [""], ["ü"]):
        with pytest.raises(ValueError, match="scope"):
            bearer_challenge(scopes=bad)
    with pytest.raises(ValueError):
        bearer_challenge(error="server_error")
    with pytest.raises(ValueError):
        bearer_challenge(resource_metadata="https://h/\r\nX-Injected: 1")


# ------------------------------------------------------------------ URLs


@pytest.mark.parametrize("uri, canonical", [
    ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
    ("HTTPS://MCP.Example.COM/MCP", "https://mcp.example.com/MCP"),
    ("https://mcp.example.com/", "https://mcp.example.com"),
    ("https://mcp.example.com:8443/mcp/", "https://mcp.example.com:8443/mcp/"),
    ("https://mcp.example.com/mcp?tenant=a", "https://mcp.example.com/mcp?tenant=a"),
    ("http://localhost:3000/mcp", "http://localhost:3000/mcp"),
    ("http://127.0.0.1/mcp", "http://127.0.0.1/mcp"),
    ("http://[::1]:8000/mcp", "http://[::1]:8000/mcp"),
])
def test_canonical_resource_uri(uri: str, canonical: str) -> None:
    assert canonical_resource_uri(uri) == canonical


@pytest.mark.parametrize("uri", [
    "mcp.example.com", "/mcp", "https://mcp.example.com/mcp#frag", "https://mcp.example.com#",
    "http://mcp.example.com/mcp", "ftp://mcp.example.com/mcp", "https://user@h.example/mcp",
    "https:///mcp", "https://h.example:port/mcp",
])
def test_canonical_resource_uri_refused(uri: str) -> None:
    with pytest.raises(ValueError):
        canonical_resource_uri(uri)


def test_well_known_urls() -> None:
    assert protected_resource_metadata_urls("https://h/mcp") == (
        "https://h/.well-known/oauth-protected-resource/mcp",
        "https://h/.well-known/oauth-protected-resource")
    assert protected_resource_metadata_urls("https://H:8443/a/b/") == (
        "https://h:8443/.well-known/oauth-protected-resource/a/b",
        "https://h:8443/.well-known/oauth-protected-resource")
    assert protected_resource_metadata_urls("https://h/") == (
        "https://h/.well-known/oauth-protected-resource",)
    assert authorization_server_metadata_urls("https://a.example/t1") == (
        "https://a.example/.well-known/oauth-authorization-server/t1",
        "https://a.example/.well-known/openid-configuration/t1",
        "https://a.example/t1/.well-known/openid-configuration")
    assert authorization_server_metadata_urls("https://a.example") == (
        "https://a.example/.well-known/oauth-authorization-server",
        "https://a.example/.well-known/openid-configuration")
    with pytest.raises(ValueError, match="query"):
        authorization_server_metadata_urls("https://a.example/?x=1")


@pytest.mark.parametrize("host, loopback", [
    ("localhost", True), ("api.localhost", True), ("127.0.0.1", True), ("127.9.9.9", True),
    ("[::1]", True), ("::1", True), ("10.0.0.1", False), ("example.com", False),
    ("localhost.example.com", False),
])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


# ------------------------------------------------------------------ metadata


def test_protected_resource_metadata() -> None:
    prm = ProtectedResource("https://MCP.example.com/mcp", ["https://auth.example.com"],
                            scopes_supported=["notes:read", "notes:write"],
                            resource_name="Notes",
                            resource_documentation="https://mcp.example.com/docs")
    assert prm.document() == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["notes:read", "notes:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Notes",
        "resource_documentation": "https://mcp.example.com/docs",
    }
    assert prm.metadata_url == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert prm.well_known_paths == ("/.well-known/oauth-protected-resource/mcp",
                                    "/.well-known/oauth-protected-resource")
    minimal = ProtectedResource("https://h.example", ["https://a.example/tenant"])
    assert minimal.document() == {"resource": "https://h.example",
                                  "authorization_servers": ["https://a.example/tenant"],
                                  "bearer_methods_supported": ["header"]}
    assert minimal.well_known_paths == ("/.well-known/oauth-protected-resource",)


@pytest.mark.parametrize("args, kwargs", [
    (("https://h/mcp", []), {}),
    (("https://h/mcp", ["http://auth.example.com"]), {}),
    (("https://h/mcp", ["https://auth.example.com#x"]), {}),
    (("https://h/mcp#x", ["https://auth.example.com"]), {}),
    (("https://h/mcp", ["https://a"]), {"scopes_supported": ["offline_access"]}),
    (("https://h/mcp", ["https://a"]), {"scopes_supported": ["two words"]}),
    (("https://h/mcp", ["https://a"]), {"resource_documentation": "javascript:alert(1)"}),
])
def test_protected_resource_refuses_bad_configuration(args: tuple[str, list[str]],
                                                      kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ProtectedResource(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value, schemes, found", [
    ("DPoP abc.def", ("bearer", "dpop"), ("dpop", "abc.def")),
    ("dpop  abc", ("bearer", "dpop"), ("dpop", "abc")),
    ("Bearer abc", ("bearer", "dpop"), ("bearer", "abc")),
    ("DPoP abc", ("bearer",), None),
    (None, ("bearer", "dpop"), None),
])
def test_credentials_of_either_scheme(value: str | None, schemes: tuple[str, ...],
                                      found: tuple[str, str] | None) -> None:
    assert parse_credentials(value, schemes) == found


@pytest.mark.parametrize("value", ["DPoP", "DPoP a b", "DPoP a,b", "DPoP tök"])
def test_malformed_dpop_credentials(value: str) -> None:
    with pytest.raises(MalformedAuthorization, match=r"dpop token|exactly one"):
        parse_credentials(value, ("bearer", "dpop"))
