"""Defaults of a Streamable HTTP endpoint that a command-line parser shows in its help.

Plain constants, apart from ``HttpOptions`` (``http_options``), which uses them: building
that dataclass costs a fresh process about 10 ms (``dataclasses`` and ``inspect``), which
``mcpkit call`` and ``mcpkit --help`` should not pay to print two defaults (issue #28).
"""

PATH = "/mcp"
"""The endpoint's path (``HttpOptions.path``)."""
DRAIN = 10.0
"""Seconds in-flight requests get after SIGTERM or SIGINT (``HttpOptions.drain``)."""
MAX_STREAM_BUFFER = 1024 * 1024
"""The default of ``HttpOptions.max_stream_buffer`` (also the bound of a stream built
without options, ``http_streams``)."""
STALL_TIMEOUT = 30.0
"""The default of ``HttpOptions.stall_timeout`` (``http_stalls``)."""
