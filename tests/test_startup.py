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

HEAVY = ("uvicorn", "starlette", "httpx", "pydantic", "jsonschema_rs", "fastjsonschema",
         "mcpkit.check", "mcpkit.client", "mcpkit.transports.http_server", "hmac", "secrets",
         "anyio.from_thread", "mcpkit.auth", "opentelemetry")

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
