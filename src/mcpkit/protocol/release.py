"""This release of mcpkit and the protocol revisions it speaks, as plain strings: what
``mcpkit --version`` prints, read without importing anything (``versions`` builds the
revision table on them). pyproject.toml reads ``MCPKIT_VERSION`` here."""

MCPKIT_VERSION = "0.1.0"
"""This library's own release, ``mcpkit.__version__``."""

V2024_11_05 = "2024-11-05"
V2025_03_26 = "2025-03-26"
V2025_06_18 = "2025-06-18"
V2025_11_25 = "2025-11-25"
V2026_07_28 = "2026-07-28"

OLDEST = V2024_11_05
"""The oldest revision spoken (stateful: with a handshake)."""
NEWEST = V2026_07_28
"""The newest revision spoken (stateless)."""
