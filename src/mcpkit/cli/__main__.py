"""``python -m mcpkit.cli``: the same command as the ``mcpkit`` script."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
