"""A scale-out deployment on loopback: redis-server, N instances of
``examples/everything.py --http --port P --redis URL``, and nginx in front of them.

``Deployment(stack, directory)`` starts it all (each process stopped by its id when the
``ExitStack`` closes); ``url`` is nginx's endpoint, ``direct(n)`` instance n's own.

Run as a program (``python -m tests.support.deployment [--instances N]``) it starts a
deployment, prints nginx's URL on one line of stdout and runs until SIGTERM or SIGINT,
then stops every process: ``scripts/conformance --scale-out`` judges that URL.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .daemon import Daemon
from .http import EVERYTHING, free_port
from .nginx import Nginx
from .redis import RedisServer


class Deployment:
    """redis-server (append-only), ``count`` everything servers on it (with ``options``
    added to their command line), nginx in front."""

    def __init__(self, stack: ExitStack, directory: Path, count: int = 3,
                 python: str = sys.executable, options: Sequence[str] = ()) -> None:
        self.redis = stack.enter_context(RedisServer(appendonly=True))
        self.instances: list[Daemon] = []
        for n in range(count):
            port = free_port()
            daemon = Daemon([python, str(EVERYTHING), "--http", "--port", str(port),
                             "--redis", self.redis.url, *options], port,
                            directory / f"instance{n}.log")
            stack.callback(daemon.stop)
            daemon.start()
            self.instances.append(daemon)
        self.nginx = stack.enter_context(Nginx([d.port for d in self.instances]))
        self.url = self.nginx.url

    def direct(self, n: int) -> str:
        return f"http://127.0.0.1:{self.instances[n].port}/mcp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=3)
    opts = parser.parse_args()

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="mcpkit-deploy.") as tmp:
        try:
            deployment = Deployment(stack, Path(tmp), opts.instances)
        except BaseException as exc:  # a missing binary (pytest's skip) or a failed start
            if isinstance(exc, SystemExit):
                raise
            print(f"cannot start the deployment: {exc}", file=sys.stderr, flush=True)
            return 2
        print(deployment.url, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
