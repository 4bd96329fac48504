"""Transports: how a session's messages reach its peer.

Byte streams, served by a session's ``BytePump``: ``stdio`` (a server's own stdin and
stdout), ``process`` (a client's server subprocess), ``memory`` (both ends in one
process). Streamable HTTP is message-level (a transport is the session's ``Output`` and
feeds it decoded messages): on the server ``asgi``, ``http_streams``, ``http_session``,
``http_server``, ``http_stateless`` and ``legacy_sse`` (HTTP+SSE of 2024-11-05, for old
clients); on the client ``http_client``, ``http_answers`` and ``http_routing`` (httpx).
HTTP is served on asyncio only; the rest runs on anyio.
"""
