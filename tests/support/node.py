"""Node.js and npm packages for tests that run a JavaScript program (tests/auth/oidc).

Also used by scripts/conformance (the conformance suite's runner).

``find_node(cache)`` gives a Node.js of at least ``NODE_MAJOR``: ``$MCPKIT_TEST_NODE``, else
the system ``node`` when it is new enough, else the Node binary that the npm package
``node-linux-<arch>`` ships (pinned to ``NODE_VERSION``, installed once into the cache),
as scripts/conformance does. ``npm_ci(project, cache)`` installs a directory's
``package-lock.json`` with ``npm ci`` into the cache, keyed by the lockfile's hash, and
returns its ``node_modules``. Both install at most once per cache (a file lock serialises
parallel runs) and leave a complete directory or none.

Only npm is needed beforehand (``.ci/run`` installs it). ``NodeUnavailable`` says
precisely what is missing; the caller decides whether that skips or fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

NODE_MAJOR = 22
NODE_VERSION = "24.21.0"  # npm package node-linux-<arch>, when the system node is older
INSTALL_SECONDS = 600


class NodeUnavailable(Exception):
    """No suitable Node.js or npm, or an install failed; the message says which."""


def cache_dir() -> Path:
    """``$MCPKIT_TEST_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/mcpkit-tests``."""
    if os.environ.get("MCPKIT_TEST_CACHE"):
        return Path(os.environ["MCPKIT_TEST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mcpkit-tests"


@contextlib.contextmanager
def locked(cache: Path) -> Iterator[None]:
    """One installer at a time per cache dir (parallel test runs share it)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _npm(args: list[str], cwd: Path, what: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise NodeUnavailable(f"npm not found (needed once, to install {what}): "
                              "apt-get install npm")
    try:
        done = subprocess.run([npm, *args, "--no-fund", "--no-audit", "--loglevel=error"],
                              cwd=cwd, capture_output=True, text=True,
                              timeout=INSTALL_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NodeUnavailable(f"installing {what} took more than {INSTALL_SECONDS}s") from None
    if done.returncode != 0:
        raise NodeUnavailable(f"installing {what} failed (npm status {done.returncode}): "
                              f"{(done.stdout + done.stderr).strip()[-2000:]}")


def _install(target: Path, what: str, fill: Path | None, args: list[str]) -> None:
    """Make ``target`` with ``npm args`` run in a fresh directory (holding a copy of
    ``fill``'s package files when given), complete or not at all."""
    if (target / ".complete").is_file():
        return
    tmp = target.with_name(f"{target.name}.tmp.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        if fill is None:
            (tmp / "package.json").write_text('{"name": "mcpkit-test-cache", "private": true}\n')
        else:
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(fill / name, tmp / name)
        _npm(args, tmp, what)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    (target / ".complete").touch()


def node_major(node: str) -> int:
    """The major version of the Node.js at ``node`` (0 when it does not run)."""
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True,
                             text=True, timeout=30, stdin=subprocess.DEVNULL).stdout
        return int(out.strip().split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def find_node(cache: Path) -> str:
    """A Node.js >= ``NODE_MAJOR``: ``$MCPKIT_TEST_NODE``, the system one, or the
    npm-packaged one (installed into ``cache`` when missing)."""
    node = os.environ.get("MCPKIT_TEST_NODE") or shutil.which("node")  # (or a caller's)
    if node and node_major(node) >= NODE_MAJOR:
        return node
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower())
    if arch is None or sys.platform != "linux":
        raise NodeUnavailable(f"no Node.js >= {NODE_MAJOR} here, and no npm-packaged one for "
                              f"{sys.platform}/{platform.machine()}")
    package = f"node-linux-{arch}"
    target = cache / f"node-{NODE_VERSION}-{arch}"
    with locked(cache):
        npm_install(target, f"{package}@{NODE_VERSION}")
    node = str(target / "node_modules" / package / "bin" / "node")
    if node_major(node) < NODE_MAJOR:
        raise NodeUnavailable(f"{node} does not run as Node >= {NODE_MAJOR} "
                              f"(delete {target} and retry)")
    return node


def npm_install(target: Path, spec: str) -> None:
    """``npm install spec`` into the directory ``target`` (once: a complete directory is
    kept); the caller holds :func:`locked` on ``target``'s cache."""
    _install(target, spec, None, ["install", "--save-exact", spec])


def npm_ci(project: Path, cache: Path) -> Path:
    """``npm ci`` of ``project``'s lockfile, into ``cache`` (once per lockfile content);
    the ``node_modules`` directory."""
    lock = (project / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (project / "package.json").read_bytes()).hexdigest()[:16]
    target = cache / f"{project.name}-{digest}"
    with locked(cache):
        _install(target, f"the packages of {project}", project,
                 ["ci", "--ignore-scripts"])
    return target / "node_modules"
