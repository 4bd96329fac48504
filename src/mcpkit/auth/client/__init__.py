"""The OAuth client: an MCP client getting tokens from an authorization server.

One module per job (docs/architecture.md lists them): the authorization code flow
(``oauth``) as a generator of steps (``steps``), discovery (``discovery``), registration
and token requests (``tokens``), the authorization request and its checks
(``authorize``), the ``WWW-Authenticate`` parser (``challenge``), the grants without a
user (``grant_auth``, ``m2m``, ``grants``, ``wif``, ``enterprise``), client assertions
(``jwt``), DPoP keys and proofs (``dpop``), revocation (``revoke``), the user-facing
redirect handlers (``callback``, ``loopback``) and the token stores (``store``).

These modules import the modules ``mcpkit.auth.urls`` and ``mcpkit.auth.addresses``,
which the resource server shares, and never ``mcpkit.auth.server``
(``tests/test_layers.py``). Users import the public names from ``mcpkit.auth``; this
package's ``__init__`` re-exports nothing.
"""
