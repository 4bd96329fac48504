"""The OAuth 2.1 resource server: bearer tokens in, a verified principal out.

One module per job (docs/architecture.md lists them): the ``Auth`` value
``Server.asgi_app(auth=...)`` takes (``config``), the ASGI middleware (``middleware``),
the verifiers (``verifier``, ``jwt`` with ``jwks`` and ``discovery``, ``introspection``),
the principal and the rules tokens are judged by (``access_token``, ``claims``), DPoP
proofs (``dpop``), the header parser and challenges (``bearer``, ``challenge``), the
RFC 9728 document (``metadata``), the token cache (``cache``) and the bounded fetcher
(``fetch``).

These modules import the modules ``mcpkit.auth.urls`` and ``mcpkit.auth.addresses``,
which the client side shares, and never ``mcpkit.auth.client``
(``tests/test_layers.py``). Users import the public names from ``mcpkit.auth``; this
package's ``__init__`` re-exports nothing.
"""
