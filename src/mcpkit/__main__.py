"""``python -m mcpkit``: the same command as the ``mcpkit`` script."""

from mcpkit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
