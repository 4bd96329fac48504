"""``examples/everything.py``'s server as a module-level ASGI app, for ASGI servers started
by import path (``bench/run.sh`` with GRANIAN=1 serves it with granian)."""

import runpy
from pathlib import Path

_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "everything.py"
app = runpy.run_path(str(_EXAMPLE), run_name="everything")["server"].asgi_app()
