"""What a server loads before it answers: a mechanical guard, not a timing.

The start-up path (``import mcpkit``, registering tools with plain type hints, answering
``initialize`` and ``tools/list`` over stdio) must not import the HTTP stack, pydantic,
the JSON Schema validators or the checker; the first ``tools/call`` may load the small
validator it needs, never pydantic or jsonschema_rs for plain schemas.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.modules import modules_after

HEAVY = ("uvicorn", "starlette", "httpx", "pydantic", "jsonschema_rs", "fastjsonschema",
         "mcpkit.check", "mcpkit.client", "mcpkit.transports.http_server", "hmac", "secrets",
         "anyio.from_thread", "mcpkit.auth", "opentelemetry", "anthropic", "openai")

SERVER = '''
import atexit, json, sys
from mcpkit import Server

server = Server("plain")

@server.tool
async def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b

@server.resource("plain://greeting")
def greeting() -> str:
    return "hello"

@server.prompt
def ask(topic: str) -> str:
    return f"Tell me about {topic}."

def report() -> None:
    sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")

atexit.register(report)
server.run()
'''


def _modules_after(tmp_path: Path, *messages: dict[str, object]) -> set[str]:
    script = tmp_path / "plain_server.py"
    script.write_text(SERVER)
    opening = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    data = "".join(json.dumps(m) + "\n" for m in (*opening, *messages))
    res = subprocess.run([sys.executable, str(script)], input=data, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(answers) == 1 + sum("id" in m for m in messages)
    assert all("result" in a for a in answers), answers
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("MODULES ")]
    return set(json.loads(line[len("MODULES "):]))


def test_import_mcpkit_loads_nothing_heavy() -> None:
    code = "import json, sys, mcpkit; print(json.dumps(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0, res.stderr
    loaded = set(json.loads(res.stdout))
    assert not [m for m in HEAVY if m in loaded]


def test_serving_initialize_and_lists_loads_nothing_heavy(tmp_path: Path) -> None:
    loaded = _modules_after(
        tmp_path,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
         "params": {"uri": "plain://greeting"}},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
         "params": {"name": "ask", "arguments": {"topic": "tides"}}},
    )
    assert not [m for m in HEAVY if m in loaded]


def test_a_plain_tool_call_loads_only_the_small_validator(tmp_path: Path) -> None:
    loaded = _modules_after(
        tmp_path,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1}}},
    )
    assert "fastjsonschema" in loaded  # the guard sees real imports: this one is expected
    assert not [m for m in HEAVY if m != "fastjsonschema" and m in loaded]


TASK_MODULES = ("mcpkit.server.task_calls", "mcpkit.server.task_methods",
                "mcpkit.server.task_runs", "mcpkit.server.task_relay", "mcpkit.storage.tasks")


def test_the_task_machinery_loads_with_the_first_task_request(tmp_path: Path) -> None:
    """A server with no task tool serves its calls without the task modules; the first
    request that asks for a task loads them and is answered as before (-32601: ``add``
    does not run as a task)."""
    plain = _modules_after(
        tmp_path,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
    assert not [m for m in TASK_MODULES if m in plain]
    script = tmp_path / "plain_server.py"
    opening = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1}, "task": {"ttl": 1000}}},
    ]
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         input="".join(json.dumps(m) + "\n" for m in opening), timeout=30)
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    assert answers[-1]["id"] == 1 and answers[-1]["error"]["code"] == -32601, answers
    assert "does not run as a task" in answers[-1]["error"]["message"]
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("MODULES ")]
    assert "mcpkit.server.task_calls" in set(json.loads(line[len("MODULES "):]))


def test_the_cli_loads_the_auth_modules_only_for_a_url(tmp_path: Path) -> None:
    """Parsing any command (login included) and a stdio command load no auth module; a
    URL command without a stored login does not either (it has nothing to refresh)."""
    root = Path(__file__).resolve().parents[1]
    notes = f"{sys.executable} {root / 'examples' / 'notes.py'}"
    code = (
        "import json, sys\n"
        "from mcpkit.cli import _parser, main\n"
        "_parser().parse_args(['login', 'http://127.0.0.1:9/mcp', '--no-browser'])\n"
        "parsed = 'mcpkit.auth' in sys.modules\n"
        f"code = main(['list', 'tools', '--stdio', {notes!r}])\n"
        "stdio = 'mcpkit.auth' in sys.modules\n"
        "url = main(['list', 'tools', 'http://127.0.0.1:9/mcp'])\n"
        "print(json.dumps([parsed, code, stdio, url, 'mcpkit.auth' in sys.modules]))\n")
    env = {"PATH": "/usr/bin:/bin", "MCPKIT_STATE_DIR": str(tmp_path / "state"),
           "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, cwd=root)
    assert res.returncode == 0, res.stderr
    parsed, code_, stdio, url, after_url = json.loads(res.stdout.splitlines()[-1])
    assert (parsed, code_, stdio) == (False, 0, False)
    assert url == 2 and after_url is False  # nothing listens on port 9


# --------------------------------------------------------------------------- allow-lists
# What each start-up path may load, by name: a change that adds a module to one of these
# paths has to add it here, in its own commit, and say why the first request needs it
# (issue #28). Standard-library modules vary with the Python version and are judged by a
# deny-list instead; every third-party package and every mcpkit module is listed.

IMPORT_MCPKIT = {"mcpkit"}

CLI_VERSION = {"mcpkit", "mcpkit.cli", "mcpkit.cli.version", "mcpkit.protocol",
               "mcpkit.protocol.release"}
"""``mcpkit --version``: answered before the parser is built, from plain strings (not the
revision table, whose dataclass would import ``dataclasses`` and ``inspect``)."""

CLI = {
    "mcpkit", "mcpkit.check", "mcpkit.check.hosts", "mcpkit.cli", "mcpkit.cli.calls",
    "mcpkit.cli.checking", "mcpkit.cli.commands", "mcpkit.cli.completion", "mcpkit.cli.dev",
    "mcpkit.cli.elicit",
    "mcpkit.cli.hints", "mcpkit.cli.install", "mcpkit.cli.loading", "mcpkit.cli.login",
    "mcpkit.cli.proxying", "mcpkit.cli.tasks", "mcpkit.cli.tokens", "mcpkit.cli.usage",
    "mcpkit.cli.version", "mcpkit.cli.waiting",
    "mcpkit.protocol", "mcpkit.protocol.scopes", "mcpkit.protocol.text",
    "mcpkit.storage", "mcpkit.storage.local",
    "mcpkit.transports", "mcpkit.transports.http_defaults",
}
"""``mcpkit --help``: the parser, built from each subcommand's module (the HTTP defaults
it shows come from plain constants, not from the ``HttpOptions`` dataclass)."""
CLI_PACKAGES = {"orjson"}
CLI_NEVER = ("asyncio", "anyio", "pydantic", "httpx", "ssl", "mcpkit.server", "mcpkit.client",
             "mcpkit.session", "mcpkit.auth")

PLAIN_STDIO = {
    "mcpkit",
    "mcpkit.protocol", "mcpkit.protocol.answers", "mcpkit.protocol.compat",
    "mcpkit.protocol.conn_base", "mcpkit.protocol.connection", "mcpkit.protocol.errors",
    "mcpkit.protocol.events", "mcpkit.protocol.framing", "mcpkit.protocol.handshake",
    "mcpkit.protocol.inbound", "mcpkit.protocol.jsonrpc", "mcpkit.protocol.lifecycle",
    "mcpkit.protocol.methods", "mcpkit.protocol.nesting", "mcpkit.protocol.outbound",
    "mcpkit.protocol.record", "mcpkit.protocol.release",
    "mcpkit.protocol.scopes",
    "mcpkit.protocol.stateless", "mcpkit.protocol.tasks", "mcpkit.protocol.versions",
    "mcpkit.server", "mcpkit.server.app", "mcpkit.server.audit",
    "mcpkit.server.content", "mcpkit.server.context",
    "mcpkit.server.declared", "mcpkit.server.handler",
    "mcpkit.server.limits", "mcpkit.server.methods", "mcpkit.server.middleware",
    "mcpkit.server.mrtr", "mcpkit.server.peers", "mcpkit.server.prompts",
    "mcpkit.server.registry", "mcpkit.server.resources", "mcpkit.server.schema",
    "mcpkit.server.serving", "mcpkit.server.tools",
    "mcpkit.server.validation", "mcpkit.server.visibility", "mcpkit.server.watch",
    "mcpkit.session", "mcpkit.session.asking", "mcpkit.session.dispatch",
    "mcpkit.session.interfaces", "mcpkit.session.loop", "mcpkit.session.pump",
    "mcpkit.transports", "mcpkit.transports.stdio",
}
"""A stdio server with one plain tool, started and stopped before any request. Not here
(#28 item 1): the task machinery and its stores (``Server.tasks`` and the ``tasks/*``
handlers are made on the first task request), the ready-made middleware, OpenTelemetry's
hooks, the argument-error texts (the first refused call) and typed elicitation forms."""
PLAIN_STDIO_PACKAGES = {"anyio", "orjson", "sniffio", "typing_extensions"}


def _ours_and_theirs(loaded: set[str]) -> tuple[set[str], set[str]]:
    """mcpkit's modules, and the top-level names of the third-party packages loaded."""
    ours = {m for m in loaded if m == "mcpkit" or m.startswith("mcpkit.")}
    tops = {m.split(".")[0] for m in loaded} - {"mcpkit"}
    theirs = {t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_")
              and t not in sys.builtin_module_names}
    return ours, theirs


def test_import_mcpkit_loads_only_the_package() -> None:
    ours, theirs = _ours_and_theirs(modules_after("import mcpkit"))
    assert ours == IMPORT_MCPKIT
    assert theirs == set()


def test_the_cli_version_and_help_load_only_the_parser() -> None:
    for argv, allowed, packages in ((["--version"], CLI_VERSION, set()),
                                    (["--help"], CLI, CLI_PACKAGES)):
        loaded = modules_after(f"from mcpkit.cli import main\nmain({argv!r})")
        ours, theirs = _ours_and_theirs(loaded)
        assert ours == allowed, (argv, sorted(ours ^ allowed))
        assert theirs == packages, (argv, sorted(theirs ^ packages))
        assert not [m for m in CLI_NEVER if m in loaded], argv
    version = modules_after("from mcpkit.cli import main\nmain(['--version'])")
    assert not [m for m in ("typing", "dataclasses", "inspect") if m in version]


def test_a_cli_call_over_stdio_loads_no_pydantic_and_no_http_stack(tmp_path: Path) -> None:
    """``mcpkit call --stdio``: the client reads its results without pydantic (#28)."""
    script = tmp_path / "plain_server.py"
    script.write_text(SERVER)
    command = f"{sys.executable} {script}"
    loaded = modules_after("from mcpkit.cli import main\n"
                           f"assert main(['call', '--stdio', {command!r}, 'add', 'a=1']) == 0")
    assert "mcpkit.client.types" in loaded
    assert not [m for m in ("pydantic", "pydantic_core", "httpx", "uvicorn", "starlette",
                            "mcpkit.server", "mcpkit.auth", "mcpkit.transports.http_options")
                if m in loaded]


def test_a_plain_stdio_server_starts_with_the_listed_modules(tmp_path: Path) -> None:
    code = ('from mcpkit import Server\n'
            'server = Server("plain")\n'
            '@server.tool\n'
            'async def add(a: int, b: int = 2) -> int:\n'
            '    """Add two integers."""\n'
            '    return a + b\n'
            'server.run()\n')
    ours, theirs = _ours_and_theirs(modules_after(code))  # stdin at EOF: it stops at once
    assert ours == PLAIN_STDIO, sorted(ours ^ PLAIN_STDIO)
    assert theirs == PLAIN_STDIO_PACKAGES, sorted(theirs ^ PLAIN_STDIO_PACKAGES)
