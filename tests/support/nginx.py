"""nginx (the Debian package) as the load balancer in front of several mcpkit instances.

``Nginx(upstreams)`` writes a configuration into a temporary directory and runs nginx in
the foreground (``daemon off``, one process: ``master_process off``) on a free port of
127.0.0.1, stopped by its process id. The configuration is what docs/deployment.md
recommends: round-robin with no stickiness, HTTP/1.1 to the upstreams with keepalive
connections, ``proxy_buffering off`` so SSE events pass at once, long read timeouts for
open streams, and the client's ``Host`` passed through. A request an instance did not
answer (it was killed before any byte of its answer) is passed to the next one, POSTs
included (``RETRY_POSTS``); ``RETRY_UNSENT`` is nginx's default for POSTs (passed on only
when they could not be sent), which bench/scaleout.py measures against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .daemon import Daemon, InTempDir, require

CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream mcp {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 600s;
            add_header X-Upstream $upstream_addr always;
            {retry}
        }}
    }}
}}
"""

# When nginx may pass a request to the next instance. nginx's default for POSTs: only when
# it could not be sent (a POST an instance took and then died with gets 502).
RETRY_UNSENT = ("proxy_request_buffering off; proxy_next_upstream error timeout; "
                "proxy_next_upstream_tries 3;")
# docs/deployment.md's choice (bench/scaleout.py measures both): POSTs too, when no answer
# had begun, within 5 s of the first attempt; with the body buffered, so that a POST of
# any size can be sent again (unbuffered, nginx cannot once it began sending the body).
RETRY_POSTS = ("proxy_request_buffering on; proxy_next_upstream error timeout non_idempotent; "
               "proxy_next_upstream_tries 3; proxy_next_upstream_timeout 5s;")


def nginx_binary() -> str:
    return require("nginx", "nginx", "the load-balanced scale-out tests")


def config(port: int, upstreams: Sequence[int], directory: Path,
           retry: str = RETRY_POSTS) -> str:
    """The nginx configuration balancing ``port`` over ``upstreams`` (ports of 127.0.0.1);
    ``retry``: the request-buffering and ``proxy_next_upstream*`` directives (whether and
    when a request is passed to another instance)."""
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in upstreams)
    return CONFIG.format(dir=directory, servers=servers, port=port, retry=retry)


class Nginx(InTempDir):
    """One nginx process balancing over ``upstreams``; a context manager."""

    def __init__(self, upstreams: Sequence[int], retry: str = RETRY_POSTS) -> None:
        binary = nginx_binary()
        super().__init__("nginx")
        conf = self.dir / "nginx.conf"
        conf.write_text(config(self.port, upstreams, self.dir, retry))
        argv = [binary, "-p", str(self.dir), "-c", str(conf), "-e", str(self.dir / "error.log")]
        self.daemon = Daemon(argv, self.port, self.dir / "nginx.out")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def errors(self) -> str:
        try:
            return (self.dir / "error.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""
