"""mcpkit as an OAuth 2.1 resource server: bearer tokens in, a verified principal out.

The pieces so far, each in its own module:

- :class:`ProtectedResource` (``metadata``): the RFC 9728 document and its URLs;
- :func:`parse_authorization` (``bearer``), the challenge builders (``challenge``),
  URL rules (``urls``).

The exceptions (:class:`InvalidToken`, :class:`MalformedAuthorization`,
:class:`VerifierUnavailable`, their base :class:`AuthError`) live with every other in
``mcpkit.protocol.errors`` and are re-exported here.
"""

from ..protocol.errors import AuthError, InvalidToken, MalformedAuthorization, VerifierUnavailable
from .bearer import parse_authorization
from .challenge import bearer_challenge, insufficient_scope, invalid_request, unauthorized
from .metadata import ProtectedResource
from .urls import canonical_resource_uri, protected_resource_metadata_urls

__all__ = [
    "AuthError",
    "InvalidToken",
    "MalformedAuthorization",
    "ProtectedResource",
    "VerifierUnavailable",
    "bearer_challenge",
    "canonical_resource_uri",
    "insufficient_scope",
    "invalid_request",
    "parse_authorization",
    "protected_resource_metadata_urls",
    "unauthorized",
]
