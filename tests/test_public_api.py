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
