"""The documentation site builds in strict mode, links only to pages it has, and reads at
1024 pixels without sideways scrolling.

``mkdocs build --strict`` (mkdocs.yml) fails on any warning: a broken link or anchor
between pages, a page missing from the nav, a docstring mkdocstrings cannot render. The
built site is then crawled: every internal ``href``/``src`` of every page must name a file
of the site, and every ``#anchor`` an id of its target page. Two pages (the quickstart and
the generated command-line reference) are rendered in headless Chromium: a 1024-pixel
screenshot, and no document wider than the window.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.chromium import find_chromium, screenshot, widths

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "hooks" / "cli_reference.py"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-4000:]
    return out


class _Page(HTMLParser):
    """The links (href, src) and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name in ("id", "name"):
                self.ids.add(value)


def _parse(page: Path) -> _Page:
    parsed = _Page()
    parsed.feed(page.read_text("utf-8"))
    return parsed


def _target(site: Path, page: Path, link: str) -> tuple[Path, str] | None:
    """The file and anchor an internal link points to (None for an external one); a
    path from the root (the 404 page's) is taken from the site's root."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
        return None
    base = site if parts.path.startswith("/") else page.parent
    path = page if not parts.path else (base / unquote(parts.path).lstrip("/")).resolve()
    if path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


def broken_links(site: Path) -> list[str]:
    site = site.resolve()
    pages = {p.resolve(): _parse(p) for p in site.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            target = _target(site, page, link)
            if target is None:
                continue
            path, anchor = target
            where = f"{page.relative_to(site)}: {link}"
            if not path.exists():
                broken.append(where)
            elif anchor and path in pages and anchor not in pages[path].ids:
                broken.append(f"{where} (no such anchor)")
    return broken


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("quickstart", "server", "eras", "design", "http", "client", "cli",
                 "check", "api", "migration", "testing", "performance"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "index.html").is_file()


def test_the_cli_reference_is_the_parser(site: Path) -> None:
    """Every subcommand of mcpkit.cli._parser() has its usage on the page, options and all."""
    from mcpkit.cli import _parser

    spec = importlib.util.spec_from_file_location("cli_reference", HOOK)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)

    html = (site / "cli" / "index.html").read_text("utf-8")
    assert "&lt;!-- cli-reference --&gt;" not in html and "cli-reference -->" not in html
    for name, _, sub in hook._subcommands(_parser()):
        assert f"usage: mcpkit {name}" in html, name
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in html, (name, flag)


def test_no_internal_link_is_broken(site: Path) -> None:
    assert broken_links(site) == []


def test_the_crawler_finds_a_broken_link_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<h1 id="top">A</h1><a href="../b/">b</a><a href="#top">t</a>'
        '<a href="../a/#nope">n</a><a href="https://example.com/x">x</a>')
    assert broken_links(tmp_path) == ["a/index.html: ../b/", "a/index.html: ../a/#nope "
                                      "(no such anchor)"]


@pytest.mark.parametrize("page", ["quickstart", "cli"])
def test_page_renders_in_chromium_at_1024_px(site: Path, page: str, tmp_path: Path) -> None:
    exe = find_chromium()
    html = site / page / "index.html"
    png = tmp_path / f"{page}.png"
    width, height, size = screenshot(exe, tmp_path / "profile-shot", html.as_uri(), png)
    assert width == 1024 and height > 0 and size > 10_000
    scroll_width, client_width = widths(exe, tmp_path / "profile-dom", html)
    assert 900 <= client_width <= 1024
    assert scroll_width <= client_width, f"{page}: scrollWidth {scroll_width} > {client_width}"
