"""Address classes, and which of them the OAuth client may fetch from.

What: :func:`classify_host` puts a URL's host in a :class:`HostClass` without any I/O:
an IP literal by its range, in every spelling a resolver would turn into one (dotted,
but also ``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``: the C library's
``inet_aton`` forms, which httpx passes through as names), an IPv4-mapped
(``::ffff:a.b.c.d``) or NAT64 (``64:ff9b::/96``) IPv6 address by the IPv4 address it
carries; ``localhost``, ``*.localhost`` (any case, trailing dot or not) as loopback; any
other name is ``None``: only resolving it can tell. :func:`classify_address` does the
same for an address a connection reached. :func:`refusal` is the rule:

- a public address is always allowed;
- a private (RFC 1918, unique local ``fc00::/7``, shared ``100.64/10``, and whatever
  else is not globally routable), loopback (which includes ``0.0.0.0`` and ``::``: a
  connection to them reaches this host) or link-local (``169.254/16``, ``fe80::/10``, and
  the cloud metadata addresses ``169.254.169.254``, ``fd00:ec2::254``,
  ``100.100.100.200``, and the name ``metadata.google.internal``) address is allowed
  only when the MCP server itself is in that class: an MCP server on 127.0.0.1 may send
  its client to an authorization server on 127.0.0.1, a public one may not send it to
  10.0.0.5 or to the cloud metadata service;
- ``allow_private_networks`` (``OAuth(allow_private_networks=True)``, for an enterprise
  whose authorization server lives on its own network) also allows private and loopback
  addresses, never link-local ones;
- multicast, broadcast and reserved addresses are never allowed.

Why: the URLs the OAuth client fetches (the authorization server's metadata, its
``registration_endpoint``, ``token_endpoint``...) come from documents the MCP server
controls. Without this rule a malicious server turns every client into a request forger
against the user's own network (a router's admin page, a Redis on localhost, the cloud
metadata service and its credentials).

Failure modes: none; the functions are pure. ``refusal`` returns the reason as a
sentence (``None`` when allowed); callers raise
:class:`~mcpkit.protocol.errors.AuthorizationFailed` with it.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
_METADATA_NAMES = frozenset({"metadata.google.internal"})
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")  # inet_aton's parts


class HostClass(enum.Enum):
    """Where an address is, as far as a request forger is concerned."""

    PUBLIC = "public"
    PRIVATE = "private"
    LOOPBACK = "loopback"
    LINK_LOCAL = "link-local"
    UNROUTABLE = "unroutable"  # multicast, broadcast, reserved


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """``host`` read the way ``inet_aton`` reads it (1 to 4 parts, each decimal, octal
    with a leading 0 or hexadecimal with 0x; the last part fills the remaining bytes),
    or None when it is not such a number."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    if not all(_NUMBER.fullmatch(part) for part in parts):
        return None
    values = [int(part[2:] or "0", 16) if part[:2].lower() == "0x"
              else int(part, 8) if part.startswith("0") else int(part)
              for part in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def parse_address(host: str) -> IPAddress | None:
    """The address a host names literally (brackets, an IPv6 zone, a trailing dot and
    the ``inet_aton`` spellings allowed), or None for a name."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name.split("%", 1)[0]  # an IPv6 zone (``fe80::1%eth0``, ``%25eth0`` in URLs)
    if ":" in name:
        try:
            return ipaddress.IPv6Address(name)
        except ValueError:
            return None
    return _inet_aton(name[:-1] if name.endswith(".") else name)


def classify_address(address: IPAddress | str) -> HostClass:
    """The class of an IP address (a string is parsed as by :func:`parse_address`; one
    that is no address is :attr:`HostClass.UNROUTABLE`)."""
    if isinstance(address, str):
        parsed = parse_address(address)
        if parsed is None:
            return HostClass.UNROUTABLE
        address = parsed
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return classify_address(address.ipv4_mapped)
        if address in _NAT64:
            return classify_address(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.is_unspecified or address.is_loopback:
        return HostClass.LOOPBACK
    if address.is_link_local or address in _METADATA_ADDRESSES:
        return HostClass.LINK_LOCAL
    if (address.is_multicast or address.is_reserved
            or address == ipaddress.IPv4Address("255.255.255.255")):
        return HostClass.UNROUTABLE
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return HostClass.PRIVATE
    if address.is_private or not address.is_global or (
            isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return HostClass.PRIVATE
    return HostClass.PUBLIC


def classify_host(host: str) -> HostClass | None:
    """The class of a URL's host without resolving it: None for a name other than
    ``localhost``, ``*.localhost`` and the cloud metadata names."""
    address = parse_address(host)
    if address is not None:
        return classify_address(address)
    name = host.strip().lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return HostClass.LOOPBACK
    if name in _METADATA_NAMES:
        return HostClass.LINK_LOCAL
    return None


def refusal(target: HostClass, server: Iterable[HostClass], *,
            allow_private_networks: bool = False) -> str | None:
    """Why a fetch to an address of class ``target`` is refused to a client of an MCP
    server whose host or connected address is of the classes ``server``; None when it
    is allowed (see the module docstring)."""
    if target is HostClass.PUBLIC:
        return None
    if target is HostClass.UNROUTABLE:
        return "an unroutable (multicast, broadcast or reserved) address"
    if target in set(server):
        return None
    if allow_private_networks and target in (HostClass.PRIVATE, HostClass.LOOPBACK):
        return None
    hint = ("" if target is HostClass.LINK_LOCAL
            else "; OAuth(allow_private_networks=True) allows it")
    return f"a {target.value} address, and the MCP server is not on one{hint}"
