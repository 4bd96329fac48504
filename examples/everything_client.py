"""A client that follows the official MCP conformance suite's client contract.

    MCP_CONFORMANCE_SCENARIO=tools_call python examples/everything_client.py URL

The scenario comes from ``MCP_CONFORMANCE_SCENARIO``, the revision to offer from
``MCP_CONFORMANCE_PROTOCOL_VERSION``, scenario data from ``MCP_CONFORMANCE_CONTEXT``
(JSON); the server URL is the last argument. Exit status 0 means the client did its
part; the suite judges the traffic.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from mcpkit.auth import (
    ClientCredentials,
    ClientCredentialsAuth,
    EnterpriseAuth,
    FollowRedirect,
    JWTBearerAuth,
    OAuth,
)
from mcpkit.client import Client, Http

log = logging.getLogger("everything_client")


async def basic(url: str, version: str | None, context: dict[str, Any]) -> None:
    """initialize / tools_call: connect, list tools, call the first one with a=2, b=3."""
    async with Client(url, name="mcpkit-conformance-client", protocol_version=version,
                      mode="auto") as c:
        if not c.supports("tools"):
            return  # the server offers no tools: the handshake was the whole exchange
        tools = await c.list_tools()
        if tools:
            result = await c.call_tool(tools[0].name, {"a": 2, "b": 3})
            log.info("called %s: %s", tools[0].name, result.text)


async def elicitation_defaults(url: str, version: str | None, context: dict[str, Any]) -> None:
    """Accept every elicitation with empty content: the client fills in schema defaults."""

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async with Client(url, elicitation=accept, protocol_version=version, mode="auto") as c:
        names = [t.name for t in await c.list_tools()]
        name = next((n for n in names if "elicitation" in n and "default" in n), None)
        if name is None:
            raise SystemExit(f"no elicitation-defaults tool among {names}")
        result = await c.call_tool(name, {})
        log.info("result: %s", result.text)


async def sse_retry(url: str, version: str | None, context: dict[str, Any]) -> None:
    """Call a tool whose SSE answer is cut: the client waits `retry`, resumes with GET."""
    async with Client(url, protocol_version=version, mode="auto") as c:
        tools = await c.list_tools()
        name = tools[0].name if tools else "test_reconnection"
        result = await c.call_tool(name, {})
        log.info("result after reconnection: %s", result.text)


async def list_only(url: str, version: str | None, context: dict[str, Any]) -> None:
    """json-schema-ref-no-deref: list tools; never fetch a network $ref in a schema."""
    async with Client(url, protocol_version=version, mode="auto") as c:
        await c.list_tools()


async def schema_echo(url: str, version: str | None, context: dict[str, Any]) -> None:
    """json-schema-2020-12-preservation: send the rich tool's inputSchema, as the client
    received it, back through the echo tool (every 2020-12 keyword must survive)."""
    async with Client(url, protocol_version=version, mode="auto") as c:
        tools = {t.name: t for t in await c.list_tools()}
        rich = tools.get("json_schema_2020_12_tool")
        if rich is None or "json_schema_echo" not in tools:
            raise SystemExit(f"the scenario's tools are missing: {sorted(tools)}")
        result = await c.call_tool("json_schema_echo", {"schema": rich.input_schema})
        log.info("echoed: %s", result.text[:200])


async def every_tool(url: str, version: str | None, context: dict[str, Any]) -> None:
    """request-metadata, request state and header scenarios: call every listed tool
    (answering any input request), so each request carries _meta and routing headers."""

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "ok"},
                "model": "conformance"}

    async with Client(url, protocol_version=version, mode="auto", elicitation=accept,
                      sampling=sample, roots=["file:///tmp"]) as c:
        if not c.supports("tools"):
            return  # nothing to call: the metadata of the exchange so far is the test
        tools = await c.list_tools()
        calls = context.get("toolCalls")
        if isinstance(calls, list):  # the scenario says which calls to make
            listed = {t.name for t in tools}
            for call in calls:
                if call.get("name") in listed:
                    result = await c.call_tool(call["name"], call.get("arguments") or {})
                    log.info("%s -> %s", call["name"], result.text[:200])
            return
        for tool in tools:
            props = (tool.input_schema or {}).get("properties") or {}
            samples = {"string": "x", "integer": 1, "number": 1.5, "boolean": True}
            args = {k: samples.get((v or {}).get("type"), "x") for k, v in props.items()}
            result = await c.call_tool(tool.name, args)
            log.info("%s -> %s", tool.name, result.text[:200])


# The Client ID Metadata Document URL the suite's auth scenarios expect a client to use.
CIMD_URL = "https://conformance-test.local/client-metadata.json"


# The DPoP extension's scenarios (SEP-1932): the same flow with DPoP-bound tokens (a new
# P-256 key); the suite says nothing else to the client, so the scenario name decides.
DPOP_SCENARIOS = ("auth/dpop", "auth/dpop-nonce")


async def authorized(url: str, version: str | None, context: dict[str, Any]) -> None:
    """auth/*: authorize (the suite's authorization server redirects straight back, so
    the redirect is followed without a browser), list tools and call the first one.
    Pre-registered credentials come from the context when the scenario gives them; the
    DPoP scenarios ask for DPoP-bound tokens."""
    client = None
    if isinstance(context.get("client_id"), str):
        client = ClientCredentials(context["client_id"], context.get("client_secret"))
    auth = OAuth(FollowRedirect("http://localhost:3000/callback"), client=client,
                 client_metadata_url=CIMD_URL, client_name="mcpkit-conformance-client",
                 dpop=context.get("name") in DPOP_SCENARIOS)
    await call_first_tool(url, version, auth)


async def machine(url: str, version: str | None, context: dict[str, Any]) -> None:
    """auth/client-credentials-*: the client credentials grant, no user; the context
    gives ``client_id`` with ``client_secret``, or ``private_key_pem`` and
    ``signing_algorithm`` (private_key_jwt)."""
    pem = context.get("private_key_pem")
    auth = ClientCredentialsAuth(
        context["client_id"], None if pem else context.get("client_secret"),
        private_key=pem, signing_alg=context.get("signing_algorithm"))
    await call_first_tool(url, version, auth)


async def workload(url: str, version: str | None, context: dict[str, Any]) -> None:
    """auth/wif-jwt-bearer: workload identity federation; the context gives the
    workload's JWT (``valid_jwt``) and a ``client_id`` the server does not need."""
    await call_first_tool(url, version, JWTBearerAuth(context["valid_jwt"]))


async def enterprise(url: str, version: str | None, context: dict[str, Any]) -> None:
    """auth/enterprise-managed-authorization: the ID token from the context exchanged
    at the IdP for an ID-JAG, then the JWT bearer grant with the client's secret."""
    auth = EnterpriseAuth(
        context["idp_id_token"], idp_token_endpoint=context["idp_token_endpoint"],
        idp_issuer=context.get("idp_issuer"), idp_client_id=context["idp_client_id"],
        client_id=context["client_id"], client_secret=context.get("client_secret"))
    await call_first_tool(url, version, auth)


async def call_first_tool(url: str, version: str | None, auth: httpx.Auth) -> None:
    """Connect with ``auth``, list the tools and call the first one without arguments."""
    async with Client(Http(url, auth=auth),
                      name="mcpkit-conformance-client", protocol_version=version, mode="auto") as c:
        tools = await c.list_tools()
        if tools:
            result = await c.call_tool(tools[0].name, {})
            log.info("called %s: %s", tools[0].name, result.text)


SCENARIOS: dict[str, Callable[[str, str | None, dict[str, Any]], Awaitable[None]]] = {
    "initialize": basic,
    "tools_call": basic,
    "tools-call": basic,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "elicitation-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_echo,
    "request-metadata": every_tool,
    "sep-2322-client-request-state": every_tool,
    "http-standard-headers": every_tool,
    "http-custom-headers": every_tool,
    "http-invalid-tool-headers": every_tool,
    "auth/client-credentials-basic": machine,
    "auth/client-credentials-jwt": machine,
    "auth/wif-jwt-bearer": workload,
    "auth/enterprise-managed-authorization": enterprise,
}


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if len(sys.argv) < 2:
        print("usage: everything_client.py URL (scenario in MCP_CONFORMANCE_SCENARIO)",
              file=sys.stderr)
        return 2
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = {"name": scenario,
               **json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")}
    handler = SCENARIOS.get(scenario) or (authorized if scenario.startswith("auth/")
                                          else None)
    if handler is None:
        print(f"unsupported scenario {scenario!r}", file=sys.stderr)
        return 1
    anyio.run(handler, url, version, context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
