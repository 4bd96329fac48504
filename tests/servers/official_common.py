"""What both official-SDK fixtures share: completions, logging/setLevel, resource
subscriptions (which MCPServer does not register itself), and the tools that report them.

Imported by the fixture scripts beside it (their folder is on ``sys.path`` when run)."""

from __future__ import annotations

import json

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

LANGUAGES = ["python", "pascal", "perl", "php", "rust", "ruby"]
NAMES = ["alice", "albert", "bob"]


def add_common(server: MCPServer, STATE: dict[str, object]) -> None:
    """Register the shared handlers on ``server``; ``STATE`` keeps level and subscriptions."""
    @server.completion()
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion | None:
        if isinstance(ref, types.PromptReference) and ref.name == "review" \
                and argument.name == "language":
            values = [v for v in LANGUAGES if v.startswith(argument.value)]
            code = (context.arguments or {}).get("code", "") if context is not None else ""
            if code.startswith("fn "):  # the code already written narrows the language
                values = [v for v in values if v == "rust"]
            return types.Completion(values=values, total=len(values), has_more=False)
        if isinstance(ref, types.ResourceTemplateReference) and ref.uri == "greeting://{name}":
            values = [n for n in NAMES if n.startswith(argument.value)]
            return types.Completion(values=values, total=len(values), has_more=False)
        return None

    # ---------------------------------------------------------------------- logging, subscriptions

    lowlevel = server._lowlevel_server

    async def set_level(ctx: object, params: types.SetLevelRequestParams) -> types.EmptyResult:
        STATE["level"] = params.level
        return types.EmptyResult()

    async def subscribe(ctx: object, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subs = STATE["subscriptions"]
        assert isinstance(subs, set)
        subs.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: object, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subs = STATE["subscriptions"]
        assert isinstance(subs, set)
        subs.discard(str(params.uri))
        return types.EmptyResult()

    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams,
                                 unsubscribe)

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Report ``uri`` updated (notifications/resources/updated) if it is subscribed."""
        subs = STATE["subscriptions"]
        assert isinstance(subs, set)
        if uri in subs:
            await ctx.session.send_resource_updated(uri)
            return "notified"
        return "not subscribed"

    @server.tool()
    def status() -> str:
        """The log level the client set and the subscribed URIs."""
        subs = STATE["subscriptions"]
        assert isinstance(subs, set)
        return json.dumps({"level": STATE["level"], "subscriptions": sorted(subs)})
