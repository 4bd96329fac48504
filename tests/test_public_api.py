"""Guard the public surface: everything in ``__all__`` exists, is documented and shows
up as ``mcpkit.X`` in tracebacks; nothing public is missing from ``__all__``."""

from __future__ import annotations

import subprocess
import sys

import mcpkit
import mcpkit.client


def test_all_names_exist_and_are_documented() -> None:
    for name in mcpkit.__all__:
        obj = getattr(mcpkit, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__doc__, f"mcpkit.{name} has no docstring"


def test_classes_present_as_mcpkit_module() -> None:
    for name in mcpkit.__all__:
        obj = getattr(mcpkit, name)
        if isinstance(obj, type):
            assert obj.__module__ == "mcpkit", (name, obj.__module__)


def test_no_public_name_left_out_of_all() -> None:
    public = {
        n for n, v in vars(mcpkit).items()
        if not n.startswith("_") and not isinstance(v, type(sys))
    }
    assert public <= set(mcpkit.__all__), public - set(mcpkit.__all__)
    assert len(mcpkit.__all__) == len(set(mcpkit.__all__))


def test_client_surface() -> None:
    for name in mcpkit.client.__all__:
        assert hasattr(mcpkit.client, name)


def test_import_keeps_heavy_modules_off_the_start_up_path() -> None:
    code = (
        "import sys, mcpkit; heavy = {'pydantic', 'jsonschema_rs', 'httpx', 'starlette'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"importing mcpkit loaded {out}"


def test_auth_surface_has_the_client_pieces() -> None:
    import mcpkit.auth

    client_side = {"OAuth", "RedirectHandler", "FollowRedirect", "LoopbackRedirect",
                   "ClientCredentials", "ClientCredentialsAuth", "PrivateKeyJWT",
                   "TokenStore", "MemoryTokenStore", "FileTokenStore", "Tokens",
                   "AuthorizationFailed", "HostClass", "classify_host"}
    assert client_side <= set(mcpkit.auth.__all__), client_side - set(mcpkit.auth.__all__)
    for name in mcpkit.auth.__all__:
        obj = getattr(mcpkit.auth, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__doc__, f"mcpkit.auth.{name} has no docstring"
    assert mcpkit.client.AuthorizationFailed is mcpkit.auth.AuthorizationFailed


def test_importing_the_client_leaves_the_auth_modules_alone() -> None:
    code = ("import sys, mcpkit, mcpkit.client; "
            "print(sorted(m for m in sys.modules if m.startswith('mcpkit.auth')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"importing mcpkit.client loaded {out}"


def test_the_api_pages_table_lists_exactly_the_public_names() -> None:
    """Issue #26 item 12: docs/api.md opens with a table of every name of ``__all__``, one
    line each (readable where ``:::`` directives are not: the repository browser); a name
    added, removed or renamed without the table fails here."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    start = page.index("<!-- public-names:")
    assert start < page.index(":::")  # the overview comes first
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", page[start:].split("\n\n", 1)[0], re.M)
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), names
    assert set(names) == set(mcpkit.__all__), set(names) ^ set(mcpkit.__all__)
    assert all(len(text.strip()) > 10 for _, text in rows)


def test_every_public_name_has_one_lazy_source() -> None:
    """``mcpkit``'s names are loaded on first use from the module ``_EXPORTS`` names; a
    name added to ``__all__`` without a source (or the reverse) fails here, not in a
    user's ``from mcpkit import X``."""
    assert set(mcpkit._EXPORTS) == set(mcpkit.__all__) - {"__version__"}
    assert set(dir(mcpkit)) >= set(mcpkit.__all__)
