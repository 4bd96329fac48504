"""``examples/everything.py``'s server served over HTTP with ``auth=``: bearer tokens of the
development issuer of ``examples/protected_notes.py`` (a fixed key, ``JWTVerifier``), for
``bench/auth_ratio.py``.

    python bench/everything_protected.py --port N --state-dir DIR
"""

import argparse
import runpy
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

from protected_notes import dev_auth, resource_url  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--state-dir", required=True)
opts = parser.parse_args()
server = runpy.run_path(str(EXAMPLES / "everything.py"), run_name="everything")["server"]
server.run("http", port=opts.port,
           auth=dev_auth(Path(opts.state_dir), resource_url("127.0.0.1", opts.port)))
