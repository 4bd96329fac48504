"""The ``mcpkit`` command end to end, as a subprocess (``python -m mcpkit.cli``).

Exit status contract: 0 success, 1 the server answered with an error (or a tool result has
``isError``), 2 usage errors (bad target, bad JSON, unknown tool, cannot start).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.http import free_port

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
EVERYTHING = shlex.join([PY, str(ROOT / "examples" / "everything.py")])
RAW = str(ROOT / "tests" / "servers" / "client_raw.py")
NOTES = shlex.join([PY, "-m", "mcpkit.cli", "run", str(ROOT / "examples" / "notes.py")])


def mcpkit(*args: str, env: dict[str, str] | None = None, timeout: float = 10
           ) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run(
        [PY, "-m", "mcpkit.cli", *args],
        capture_output=True, text=True, errors="replace", timeout=timeout, cwd=ROOT,
        env={**environ, **(env or {})},
    )


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    res = mcpkit(*args, env=env)
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)
    return res.stdout


def error_lines(res: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.strip()]


# ---------------------------------------------------------------------- list


def test_list_tools_table() -> None:
    out = ok("list", "tools", "--stdio", EVERYTHING)
    names = [line.split()[0] for line in out.splitlines()]
    assert "echo" in names and "add" in names
    echo = next(line for line in out.splitlines() if line.startswith("echo "))
    assert "Echo the text back unchanged" in echo
    assert "\x1b[" not in out  # no colour when stdout is not a terminal


@pytest.mark.parametrize("kind, key, expected", [
    ("tools", "name", "add"),
    ("resources", "uri", "test://static-text"),
    ("templates", "uriTemplate", "test://template/{id}/data"),
    ("prompts", "name", "test_prompt_with_arguments"),
])
def test_list_json(kind: str, key: str, expected: str) -> None:
    items = json.loads(ok("list", kind, "--json", "--stdio", EVERYTHING))
    assert isinstance(items, list)
    assert expected in [item[key] for item in items]
    if kind == "tools":
        add = next(item for item in items if item["name"] == "add")
        assert add["inputSchema"]["type"] == "object"  # camelCase, as on the wire


# ---------------------------------------------------------------------- call


def test_call_add() -> None:
    assert ok("call", "--stdio", EVERYTHING, "add", "a=1", "b=2") == "3\n"


def test_call_json() -> None:
    data = json.loads(ok("call", "--json", "--stdio", EVERYTHING, "add", "--args",
                         '{"a": 1, "b": 2}'))
    assert data["structuredContent"] == {"result": 3}
    assert data["isError"] is False


def test_call_json_is_the_same_document_in_both_eras() -> None:
    docs = [json.loads(ok("call", "--json", "--era", era, "--stdio", EVERYTHING, "add",
                          "a=1", "b=2")) for era in ("stateful", "stateless")]
    assert docs[0] == docs[1] == {"content": [{"type": "text", "text": "3"}],
                                  "structuredContent": {"result": 3}, "isError": False}


def test_call_string_argument_stays_a_string() -> None:
    # "123" parses as JSON, but echo's schema says string: it must be passed as "123"
    assert ok("call", "--stdio", EVERYTHING, "echo", "text=123") == "123\n"
    assert ok("call", "--stdio", EVERYTHING, "echo", "text=a = b") == "a = b\n"


def test_call_argument_syntax() -> None:
    """key=value follows the schema (a string where it takes one); key:=JSON is JSON."""
    assert ok("call", "--stdio", EVERYTHING, "slow_compute", "seconds:=0", "label=[1]") == (
        "Computed [1] in 0s\n")
    res = mcpkit("call", "--stdio", EVERYTHING, "slow_compute", "seconds:=soon")
    assert res.returncode == 2
    assert error_lines(res) == ["mcpkit: error: seconds:= takes JSON, and 'soon' is not "
                                "(Expecting value); for a string write seconds=soon"]
    res = mcpkit("call", "--stdio", EVERYTHING, "slow_compute", "seconds")
    assert res.returncode == 2 and "expected key=value or key:=JSON" in res.stderr


def test_parse_arguments_follows_the_schema() -> None:
    from mcpkit.cli.calls import parse_arguments

    schema = {"properties": {"t": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                             "e": {"enum": ["1", "2"]}, "n": {"type": "integer"}}}
    assert parse_arguments('{"n": 1, "t": "a"}', ["t=123", "e=2", "n=5", "x:=null", "y=z"],
                           schema) == {"t": "123", "e": "2", "n": 5, "x": None, "y": "z"}
    assert parse_arguments(None, ["a=[1,2]", "b:=[1, 2]", "c=3"], None, strings=True) == {
        "a": "[1,2]", "b": "[1, 2]", "c": "3"}


def test_call_tool_error_exits_1() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "test_error_handling")
    assert res.returncode == 1
    assert "This tool intentionally returns an error for testing" in res.stderr
    assert res.stdout == ""


def test_call_bad_argument_type_is_a_tool_error() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "add", "a=1", "b=x")
    assert res.returncode == 1
    assert "b" in res.stderr and "integer" in res.stderr


def test_call_unknown_tool_exits_2() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "nope")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert line.startswith("mcpkit: error: unknown tool 'nope': the server has ")
    assert line.endswith(f"(list them: mcpkit list tools --stdio {shlex.quote(EVERYTHING)})")
    close = error_lines(mcpkit("call", "--stdio", EVERYTHING, "ech"))
    assert close == [f"mcpkit: error: unknown tool 'ech': did you mean 'echo'? (list them: "
                     f"mcpkit list tools --stdio {shlex.quote(EVERYTHING)})"]


@pytest.mark.parametrize("args, message", [
    ("{bad", "--args is not valid JSON"),
    ("[1, 2]", "--args must be a JSON object"),
])
def test_call_bad_args_json_exits_2(args: str, message: str) -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "add", "--args", args)
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert message in line


def test_call_without_tool_name_exits_2() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING)
    assert res.returncode == 2
    assert "name the tool" in res.stderr


def test_call_timeout_exits_1() -> None:
    res = mcpkit("call", "--timeout", "1.5", "--stdio", shlex.join([PY, RAW, "normal"]),
                 "slow")
    assert res.returncode == 1
    (line,) = error_lines(res)
    assert line == ("mcpkit: error: no answer to 'tools/call' within 1.5 seconds; give it "
                    "longer with --timeout SECONDS")


def test_call_malformed_result_is_a_clean_error() -> None:
    res = mcpkit("call", "--stdio", shlex.join([PY, RAW, "normal"]), "bad")
    assert res.returncode == 1
    (line,) = error_lines(res)  # one line, no traceback
    assert line.startswith("mcpkit: error: the server's answer to tools/call is malformed")
    assert "hologram" in line


# ---------------------------------------------------------------------- targets


def test_command_that_cannot_start_exits_2() -> None:
    res = mcpkit("call", "--stdio", "/nonexistent/mcp-server --flag", "add")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert "cannot start" in line and "/nonexistent/mcp-server" in line


@pytest.mark.parametrize("args, hint", [
    (("list", "tools", "--stdio", "python s.py", "http://127.0.0.1:9/mcp"), "not both"),
    (("call", "--stdio", "python 'server.py", "add"), "No closing quotation"),
    (("call", "localhost:8000/mcp", "add"), "a URL starts with http:// or https://"),
    (("call", "server.py", "add"), "--stdio \"python server.py\""),
])
def test_target_mistakes_say_what_to_write(args: tuple[str, ...], hint: str) -> None:
    res = mcpkit(*args)
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert hint in line


@pytest.mark.parametrize("args", [
    ("call", "add", "a=1"),
    ("list", "tools"),
    ("read", "test://static-text"),
    ("call", "--stdio", "", "add"),
])
def test_no_target_exits_2(args: tuple[str, ...]) -> None:
    res = mcpkit(*args)
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert "--stdio" in line


def test_command_that_never_answers_says_what_to_check() -> None:
    res = mcpkit("list", "tools", "--timeout", "1", "--stdio", "sleep 5")
    assert res.returncode == 1
    assert error_lines(res) == [
        "mcpkit: error: the server did not answer initialize within 1.0s; is it an MCP "
        "server (run it alone, or add -v, to see what it does)? A slow start needs a "
        "longer --timeout"]


def test_server_crashing_at_start_shows_its_stderr() -> None:
    res = mcpkit("call", "--stdio", shlex.join([PY, RAW, "crash"]), "fast")
    assert res.returncode == 2  # a server that cannot start is not a server's answer
    assert "exited with status 3 before answering" in res.stderr
    assert "RuntimeError: the database is on fire" in res.stderr
    assert "not UTF-8" in res.stderr  # undecodable bytes do not break the tail
    assert "Traceback" not in res.stderr


def test_verbose_lets_server_stderr_through() -> None:
    res = mcpkit("call", "-v", "--stdio", shlex.join([PY, RAW, "crash"]), "fast")
    assert res.returncode == 2
    assert res.stderr.count("the database is on fire") == 1  # live, not repeated as a tail
    assert "last stderr lines" not in res.stderr


def test_nothing_listening_exits_2_and_says_so() -> None:
    port = free_port()
    res = mcpkit("list", "tools", "--wait", "0", f"http://127.0.0.1:{port}/mcp")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert line == (f"mcpkit: error: cannot reach http://127.0.0.1:{port}/mcp: nothing is "
                    f"listening on 127.0.0.1:{port} (connection refused); is the server "
                    "running, and are the host, port and path right?")


def test_unknown_host_exits_2() -> None:
    res = mcpkit("call", "http://no-such-host.invalid:8765/mcp", "add")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert "cannot resolve the host name 'no-such-host.invalid'" in line


def test_http_error_status_is_not_unreachable() -> None:
    """Something answers, but it is not an MCP server: that is not 'nothing listening'."""
    import http.server
    import threading

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_error(404)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        res = mcpkit("list", "tools", f"http://127.0.0.1:{httpd.server_port}/mcp")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert res.returncode == 1, res.stderr
    assert "nothing is listening" not in res.stderr
    assert error_lines(res)[-1] == (
        "mcpkit: error: cannot start the session: HTTP 404 from the server (and it has no "
        "HTTP+SSE (2024-11-05) endpoint either); check the URL's path: it must be the "
        "server's MCP endpoint")  # (its HTML error page says nothing more)


# ---------------------------------------------------------------------- read, prompt


def test_read_text() -> None:
    out = ok("read", "--stdio", EVERYTHING, "test://static-text")
    assert out == "This is the content of the static text resource.\n"


def test_read_blob_and_json() -> None:
    out = ok("read", "--stdio", EVERYTHING, "test://static-binary")
    assert out == "[blob image/png test://static-binary]\n"
    data = json.loads(ok("read", "--json", "--stdio", EVERYTHING, "test://template/5/data"))
    (item,) = data["contents"]
    assert item["uri"] == "test://template/5/data"
    assert json.loads(item["text"])["id"] == "5"


def test_read_unknown_uri_exits_1() -> None:
    res = mcpkit("read", "--stdio", EVERYTHING, "test://nope")
    assert res.returncode == 1
    (line,) = error_lines(res)
    assert "-32002" in line and "test://nope" in line
    assert "(list what there is: mcpkit list resources|templates --stdio" in line


def test_prompt_with_arguments() -> None:
    out = ok("prompt", "--stdio", EVERYTHING, "test_prompt_with_arguments", "arg1=hello",
             "arg2=42")
    assert out.splitlines() == ["user:", "Prompt with arguments: arg1='hello', arg2='42'"]
    data: dict[str, Any] = json.loads(ok("prompt", "--json", "--stdio", EVERYTHING,
                                         "test_prompt_with_arguments", "--args",
                                         '{"arg1": "x", "arg2": "y"}'))
    assert data["messages"][0]["content"]["text"] == (
        "Prompt with arguments: arg1='x', arg2='y'")


def test_prompt_arguments_are_taken_verbatim() -> None:
    out = ok("prompt", "--stdio", EVERYTHING, "test_prompt_with_arguments", "arg1=[1,2]",
             "arg2=007")
    assert out.splitlines()[1] == "Prompt with arguments: arg1='[1,2]', arg2='007'"


def test_unknown_prompt_names_the_close_ones() -> None:
    res = mcpkit("prompt", "--stdio", EVERYTHING, "test_simple_promt")
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert line.startswith("mcpkit: error: unknown prompt 'test_simple_promt': did you mean "
                           "'test_simple_prompt'?")
    assert "mcpkit list prompts --stdio" in line


def test_prompt_missing_argument_exits_1() -> None:
    res = mcpkit("prompt", "--stdio", EVERYTHING, "test_prompt_with_arguments", "arg1=x")
    assert res.returncode == 1
    assert "-32602" in res.stderr


# ---------------------------------------------------------------------- run


def test_run_notes_server(tmp_path: Path) -> None:
    env = {"MCPKIT_NOTES_DB": str(tmp_path / "notes.db")}
    added = json.loads(ok("call", "--json", "--stdio", NOTES, "notes_add", "title=Buy milk",
                          "body=two litres, semi-skimmed", 'tags=["Shopping"]', env=env))
    note = added["structuredContent"]
    assert note["title"] == "Buy milk" and note["tags"] == ["shopping"]
    assert (tmp_path / "notes.db").exists()

    found = json.loads(ok("call", "--json", "--stdio", NOTES, "notes_search", "query=milk",
                          env=env))
    assert found["structuredContent"]["total"] == 1
    assert [n["id"] for n in found["structuredContent"]["notes"]] == [note["id"]]

    none = json.loads(ok("call", "--json", "--stdio", NOTES, "notes_search", "query=bread",
                         env=env))
    assert none["structuredContent"] == {"notes": [], "total": 0}

    text = ok("read", "--stdio", NOTES, f"notes://{note['id']}", env=env)
    assert text.startswith("# Buy milk\n")


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line ``proc`` writes to stderr, waiting at most ``timeout`` seconds."""
    import select

    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], timeout)
    assert ready, f"no start-up line within {timeout}s"
    return proc.stderr.readline()


def test_run_http_serves_until_terminated(tmp_path: Path) -> None:
    """``mcpkit run --http``: one startup line naming the URL, answers over HTTP, and a
    clean exit on SIGTERM."""
    import signal

    port = free_port()
    env = {**os.environ, "MCPKIT_NOTES_DB": str(tmp_path / "notes.db")}
    proc = subprocess.Popen(
        [PY, "-m", "mcpkit.cli", "run", "--http", "--host", "127.0.0.1", "--port", str(port),
         str(ROOT / "examples" / "notes.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        first = _first_line(proc, timeout=15)
        assert f"http://127.0.0.1:{port}/mcp" in first, first
        url = f"http://127.0.0.1:{port}/mcp"
        added = json.loads(ok("call", "--json", url, "notes_add", "title=Over HTTP", "body=b"))
        assert added["structuredContent"]["title"] == "Over HTTP"
        found = json.loads(ok("call", "--json", url, "notes_search", "query=HTTP"))
        assert found["structuredContent"]["total"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (("--port", "8765"), "--host, --port and --path are for --http"),
    (("--http", "--port", "70000"), "--port must be between 0 and 65535"),
    (("--http", "--path", "mcp"), "--path must start with '/'"),
    (("--drain", "3"), "--drain is for --http"),
    (("--http", "--drain", "-1"), "--drain must be a number of seconds >= 0"),
])
def test_run_bad_http_options_exit_2(args: tuple[str, ...], message: str) -> None:
    res = mcpkit("run", *args, str(ROOT / "examples" / "notes.py"))
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert message in line


def test_run_missing_file_exits_2(tmp_path: Path) -> None:
    res = mcpkit("run", str(tmp_path / "nope.py"))
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert "no such file" in line


def test_run_file_without_server_exits_2(tmp_path: Path) -> None:
    script = tmp_path / "empty_server.py"
    script.write_text("x = 1\n")
    res = mcpkit("run", str(script))
    assert res.returncode == 2
    assert "0 Server objects" in res.stderr
