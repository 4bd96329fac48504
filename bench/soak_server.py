"""``examples/everything.py``'s server over HTTP with a low ``max_in_flight_total``, for
the cancellation phase of bench/soak.py: a request slot that a cancelled request never
gives back shows as a 503 once the few slots are gone, which the default of 65,536 would
hide.

    python bench/soak_server.py --port N --max-in-flight-total 128 [--drain SECONDS]
"""

import argparse
import inspect
import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "everything.py"

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--max-in-flight-total", type=int, required=True)
parser.add_argument("--drain", type=float, default=10.0,
                    help="seconds requests in flight get on SIGTERM")
opts = parser.parse_args()
server = runpy.run_path(str(EXAMPLE), run_name="everything")["server"]
options = {"max_in_flight_total": opts.max_in_flight_total}
if "drain" in inspect.signature(server.asgi_app).parameters:  # not in mcpkit before #25
    options["drain"] = opts.drain
server.run("http", port=opts.port, **options)
