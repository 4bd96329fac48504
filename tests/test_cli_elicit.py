"""The CLI answering a server's questions (elicitation) and showing a plain call's progress.

End to end, as subprocesses. On a terminal: stdin and stderr are a real pseudo-terminal
(``os.openpty``) that the test types into, stdout a pipe, so the test also sees that
stdout carries the result alone. The servers are ``examples/everything.py``
(``confirm_delete``, ``multi_input``, the SEP-1034 defaults form) and
``tests/servers/cli_questions.py`` (URL mode, string formats and bounds, hostile text).
Both eras: 2025-era ``elicitation/create`` (the default) and 2026-07-28 MRTR
``inputRequests`` (``--era stateless``), and ``--task`` over HTTP. The wire of the
stdio runs is recorded (tests/support/wiretap.py) and each message the CLI sent is
validated against the official schema of the revision spoken.
"""

from __future__ import annotations

import io
import json
import os
import select
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpkit.cli.elicit import Asker, Invalid, convert, fill, parse_preset

from .support.http import LiveServer, everything_server
from .support.schemas import WireChecker
from .test_cli import EVERYTHING, PY, ROOT, error_lines, mcpkit

QUESTIONS = shlex.join([PY, str(ROOT / "tests" / "servers" / "cli_questions.py")])
WIRETAP = ROOT / "tests" / "support" / "wiretap.py"


OPEN: list[Terminal] = []


class Terminal:
    """``mcpkit ARGS`` with stdin and stderr on a pseudo-terminal and stdout on a pipe."""

    def __init__(self, *args: str, timeout: float = 30) -> None:
        master, slave = os.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        self.proc = subprocess.Popen([PY, "-m", "mcpkit.cli", *args], stdin=slave,
                                     stderr=slave, stdout=subprocess.PIPE, cwd=ROOT, env=env,
                                     text=True)
        os.close(slave)
        self.master = master
        self.screen = ""  # everything the terminal showed (typed answers echo in it)
        self._pos = 0
        self.deadline = time.monotonic() + timeout
        OPEN.append(self)

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(0.0, wait))
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # EIO: the other side closed
            return False
        self.screen += chunk.decode("utf-8", errors="replace")
        return bool(chunk)

    def expect(self, text: str) -> None:
        """Wait (bounded) until the terminal shows ``text`` after what was expected before."""
        self.expect_any(text)

    def expect_any(self, *texts: str) -> str:
        """Wait (bounded) for whichever of ``texts`` the terminal shows first; that one."""
        while True:
            found = [(self.screen.find(t, self._pos), t) for t in texts]
            shown = sorted((i, t) for i, t in found if i >= 0)
            if shown:
                index, text = shown[0]
                self._pos = index + len(text)
                return text
            left = self.deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 1.0)):
                self.close()
                raise AssertionError(f"the terminal showed none of {texts}:\n{self.screen}")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def answer(self, prompt: str, text: str) -> None:
        self.expect(prompt)
        self.type(text + "\n")

    def dialog(self, *steps: tuple[str, str | None]) -> None:
        """For each (text, reply) in turn: wait for text, then type reply (None: none)."""
        for text, reply in steps:
            self.expect(text)
            if reply is not None:
                self.type(reply + "\n")

    def finish(self) -> tuple[int, str]:
        """Exit status and stdout, the terminal drained to the end."""
        while self.proc.poll() is None and time.monotonic() < self.deadline:
            self._read(0.2)
        while select.select([self.master], [], [], 0)[0] and self._read(0.0):
            pass
        try:
            out, _ = self.proc.communicate(timeout=max(1.0, self.deadline - time.monotonic()))
        finally:
            self.close()
        return self.proc.returncode, out

    def close(self) -> None:
        """Stop the process (if still running) and close the terminal; idempotent."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


@pytest.fixture(autouse=True)
def _stop_terminals() -> Iterator[None]:
    """Every terminal a test opened is closed, its process stopped, even when it fails."""
    yield
    for term in OPEN:
        term.close()
    OPEN.clear()


def tapped(command: str, log: Path) -> str:
    return shlex.join([PY, str(WIRETAP), str(log), "--", *shlex.split(command)])


def check_wire(log: Path, revision: str | None) -> list[dict[str, Any]]:
    """Validate every message the CLI sent; the messages it sent, in order."""
    checker = WireChecker(side="client", revision=revision)
    sent = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["dir"] == "c2s":
            # the tasks extension's requests are not in the revision's schema (their
            # shapes are checked in tests/test_tasks_extension.py)
            if not str(entry["msg"].get("method", "")).startswith("tasks/"):
                checker.check(entry["msg"])
            sent.append(entry["msg"])
        else:
            checker.saw_peer(entry["msg"])
    assert checker.checked > 2
    return sent


# ---------------------------------------------------------------------- on a terminal


@pytest.mark.parametrize("era", ["stateful", "stateless"])
def test_confirm_delete_answered_on_a_terminal(era: str, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    term = Terminal("call", "--stdio", tapped(EVERYTHING, log), "--era", era,
                    "confirm_delete", "filename=x.txt")
    term.expect("The server asks: Delete x.txt?")
    term.answer("Fill in the form? [Y]es / [n]o, decline / [c]ancel: ", "maybe")
    term.answer("answer y, n or c", "y")
    term.answer("confirm (y/n, required): ", "perhaps")  # re-asked until it fits
    term.answer("answer y or n", "y")
    code, out = term.finish()
    assert (code, out) == (0, "Deleted x.txt\n"), term.screen
    sent = check_wire(log, "2026-07-28" if era == "stateless" else None)
    answers = [m for m in sent if m.get("result", {}).get("action")] + [
        r for m in sent for r in (m.get("params", {}).get("inputResponses") or {}).values()]
    assert [a.get("result", a) for a in answers] == [{"action": "accept",
                                                     "content": {"confirm": True}}]


def test_time_spent_answering_does_not_count_against_timeout() -> None:
    """--timeout 2, and the person takes 3 s to answer (2025 era: the tools/call request
    is pending meanwhile): the call still completes."""
    term = Terminal("call", "--timeout", "2", "--stdio", EVERYTHING, "confirm_delete",
                    "filename=x.txt")
    term.expect("Fill in the form?")
    time.sleep(3)
    term.type("y\n")
    term.answer("confirm (y/n, required): ", "y")
    assert term.finish() == (0, "Deleted x.txt\n"), term.screen


@pytest.mark.parametrize("era", ["stateful", "stateless"])
def test_questions_asked_together_are_asked_in_turn(era: str) -> None:
    """multi_input asks two things at once (two requests in flight in 2025; two input
    requests in 2026-07-28): one form after the other, never both reading the keyboard."""
    term = Terminal("call", "--stdio", EVERYTHING, "--era", era, "multi_input")
    replies = {"name (string, required): ": "Ada", "confirm (y/n, required): ": "y"}
    for _ in range(2):
        term.answer("Fill in the form?", "y")
        field = term.expect_any(*replies)
        term.type(replies.pop(field) + "\n")
    code, out = term.finish()
    assert (code, out) == (0, "Ada confirmed\n"), term.screen


def test_decline_and_cancel_on_a_terminal() -> None:
    term = Terminal("call", "--stdio", EVERYTHING, "confirm_delete", "filename=x.txt")
    term.answer("Fill in the form?", "n")
    assert term.finish() == (0, "Kept x.txt\n")
    term = Terminal("call", "--stdio", EVERYTHING, "confirm_delete", "filename=x.txt")
    term.expect("Fill in the form?")
    term.type("\x04")  # Ctrl-D: end of input cancels
    assert term.finish() == (0, "Kept x.txt\n")
    assert "mcpkit: cancelled (end of input)" in term.screen


def test_form_with_defaults_and_choices_on_a_terminal() -> None:
    term = Terminal("call", "--stdio", EVERYTHING, "test_elicitation_sep1034_defaults")
    term.dialog(("Fill in the form?", ""),
                ("name (string, optional) [John Doe]: ", ""),
                ("age (integer, optional) [30]: ", "forty"),
                ("answer a whole number", "41"),
                ("score (number, optional) [95.5]: ", ""),
                ("2) inactive", None),
                ("status (a number or value, optional) [active]: ", "2"),
                ("verified (y/n, optional) [y]: ", "n"))
    code, out = term.finish()
    assert code == 0, term.screen
    assert out == ("Elicitation completed: action=accept, content={'name': 'John Doe', "
                   "'age': 41, 'score': 95.5, 'status': 'inactive', 'verified': False}\n")


def test_formats_bounds_and_multiple_choice_on_a_terminal() -> None:
    term = Terminal("call", "--stdio", QUESTIONS, "profile")
    term.dialog(("Fill in the form?", "y"),
                ("email (email, required): ", "ada"),
                ("an email address", "ada@example.com"),
                ("born (date, required): ", ""),
                ("a value is required", "1815-13-10"),
                ("a date like 2026-07-28", "1815-12-10"),
                ("meeting (date-time, optional): ", "2026-07-28T09:30:00"),  # no offset
                ("with its offset", "2026-07-28T09:30:00Z"),
                ("site (uri, optional): ", ""),
                ("nick (string, required): ", "a"),
                ("at least 2 characters", "ada"),
                ("height (number, required): ", "nan"),
                ("answer a finite number", "3"),
                ("answer 2.5 or less", "1.65"),
                ("pets (integer, optional) [0]: ", ""),
                ("3) Go", None),
                ("langs (numbers or values, comma-separated, required): ", "1,2,3"),
                ("choose at most 2", "1, Rust"))
    code, out = term.finish()
    assert code == 0, term.screen
    assert json.loads(out) == {"action": "accept", "content": {
        "email": "ada@example.com", "born": "1815-12-10", "meeting": "2026-07-28T09:30:00Z",
        "nick": "ada", "height": 1.65, "pets": 0, "langs": ["py", "rs"]}}


def test_too_many_wrong_answers_cancel() -> None:
    term = Terminal("call", "--stdio", EVERYTHING, "confirm_delete", "filename=x.txt")
    term.answer("Fill in the form?", "y")
    for _ in range(5):
        term.answer("confirm (y/n, required): ", "what")
    assert term.finish() == (0, "Kept x.txt\n")
    assert "mcpkit: cancelled (5 answers to 'confirm' that did not fit)" in term.screen


@pytest.mark.parametrize("era", ["stateful", "stateless"])
def test_url_mode_on_a_terminal(era: str, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    term = Terminal("call", "--stdio", tapped(QUESTIONS, log), "--era", era, "open_link")
    term.expect("The server asks: Sign in to continue")
    term.expect("URL: https://auth.example.com/start?s=1")
    term.expect("on auth.example.com; mcpkit does not open it for you")
    term.answer("Accept and open it yourself? [Y]es / [n]o, decline / [c]ancel: ", "y")
    assert term.finish() == (0, '{"action": "accept"}\n')
    sent = check_wire(log, "2026-07-28" if era == "stateless" else None)
    if era == "stateless":  # MRTR: the call sent again with the answer
        (again,) = [m for m in sent if "inputResponses" in m.get("params", {})]
        assert again["params"]["inputResponses"] == {"signin": {"action": "accept"}}


def test_server_text_cannot_drive_the_terminal() -> None:
    term = Terminal("call", "--stdio", QUESTIONS, "hostile")
    term.expect("The server asks: \\x1b[2J\\x1b[Hcleared\\u202eevil")
    term.answer("Fill in the form?", "y")
    term.expect("OK\\x1b]0;owned\\x07? (ok)")
    term.answer("ok (y/n, required): ", "y")
    code, out = term.finish()
    assert (code, json.loads(out)) == (0, {"action": "accept", "content": {"ok": True}})
    assert "\x1b]0;" not in term.screen and "\x1b[2J" not in term.screen
    assert "\u202e" not in term.screen


def test_task_over_http_asks_on_the_terminal() -> None:
    """``--task`` over HTTP speaks 2026-07-28: the task stops in input_required and the
    CLI asks, then the task completes."""
    with LiveServer(everything_server().asgi_app()) as live:
        term = Terminal("call", live.url, "confirm_delete", "filename=y.txt", "--task")
        term.answer("Fill in the form?", "y")
        term.answer("confirm (y/n, required): ", "y")
        code, out = term.finish()
    assert (code, out) == (0, "Deleted y.txt\n"), term.screen
    assert "input_required" in term.screen


def test_progress_of_a_plain_call_is_drawn_in_place_on_a_terminal() -> None:
    term = Terminal("call", "--stdio", EVERYTHING, "slow_compute", "seconds=0.5")
    code, out = term.finish()
    assert (code, out) == (0, "Computed result in 0.5s\n")
    assert "\r\x1b[2Kslow_compute [########################] 100%" in term.screen


# ---------------------------------------------------------------------- not on a terminal


@pytest.mark.parametrize("era", ["stateful", "stateless"])
def test_not_a_terminal_declines_and_says_how_to_answer(era: str) -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "--era", era, "confirm_delete",
                 "filename=x.txt")
    assert (res.returncode, res.stdout) == (0, "Kept x.txt\n")
    assert error_lines(res) == [
        "mcpkit: the server asks: Delete x.txt?",
        "mcpkit: declined: stdin is not a terminal; answer with --elicit "
        "accept|decline|cancel|JSON|@FILE (see mcpkit call --help)"]


@pytest.mark.parametrize("era", ["stateful", "stateless"])
def test_preset_answers(era: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text('{"name": "Ada", "confirm": true, "unused": 1}')
    both = mcpkit("call", "--stdio", EVERYTHING, "--era", era, "multi_input",
                  "--elicit", f"@{answers}")
    assert (both.returncode, both.stdout, both.stderr) == (0, "Ada confirmed\n", "")
    inline = mcpkit("call", "--stdio", EVERYTHING, "--era", era, "confirm_delete",
                    "filename=x.txt", "--elicit", '{"confirm": true}')
    assert inline.stdout == "Deleted x.txt\n"
    for preset in ("decline", "cancel"):
        res = mcpkit("call", "--stdio", EVERYTHING, "--era", era, "confirm_delete",
                     "filename=x.txt", "--elicit", preset)
        assert res.stdout == "Kept x.txt\n" and f"--elicit {preset}" in res.stderr
    url = mcpkit("call", "--stdio", QUESTIONS, "--era", era, "open_link", "--elicit", "accept")
    assert url.stdout == '{"action": "accept"}\n'
    assert "https://auth.example.com/start?s=1" in url.stderr


def test_preset_that_does_not_fit_cancels_and_says_why() -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "confirm_delete", "filename=x.txt",
                 "--elicit", "accept")  # confirm is required and has no default
    assert res.stdout == "Kept x.txt\n"
    assert ("mcpkit: cancelled: the --elicit answer does not fit its form: 'confirm' is "
            "required and has no default; add it to the answer") in res.stderr
    res = mcpkit("call", "--stdio", EVERYTHING, "confirm_delete", "filename=x.txt",
                 "--elicit", '{"confirm": "sure"}')
    assert res.stdout == "Kept x.txt\n"
    assert "'confirm': answer y or n" in res.stderr


@pytest.mark.parametrize("value, message", [
    ("{bad", "--elicit takes ask, accept, decline, cancel, a JSON object or @FILE"),
    ("[1]", "--elicit JSON must be an object"),
    ("@/nonexistent/answers.json", "cannot read /nonexistent/answers.json"),
])
def test_bad_preset_is_a_usage_error(value: str, message: str) -> None:
    res = mcpkit("call", "--stdio", EVERYTHING, "greet", "name=x", "--elicit", value)
    assert res.returncode == 2
    (line,) = error_lines(res)
    assert message in line


def test_progress_of_a_plain_call_is_plain_lines_when_piped() -> None:
    res = mcpkit("call", "--json", "--stdio", EVERYTHING, "test_tool_with_progress")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["content"][0]["text"]  # stdout: the one JSON document
    assert error_lines(res) == [
        "test_tool_with_progress: progress 0/100 Completed step 0 of 100",
        "test_tool_with_progress: progress 50/100 Completed step 50 of 100",
        "test_tool_with_progress: progress 100/100 Completed step 100 of 100"]


# ---------------------------------------------------------------------- the field rules


@pytest.mark.parametrize("raw, prop, expected", [
    ("5", {"type": "integer", "minimum": 1}, 5),
    ("2.0", {"type": "number"}, 2),
    ("1e3", {"type": "number"}, 1000),
    ("yes", {"type": "boolean"}, True),
    ("b", {"type": "string", "enum": ["a", "b"]}, "b"),
    ("Two", {"type": "string", "enum": ["1", "2"], "enumNames": ["One", "Two"]}, "2"),
    ("2", {"type": "string", "oneOf": [{"const": "x", "title": "X"},
                                       {"const": "y", "title": "Y"}]}, "y"),
    ("a,a", {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, ["a"]),
    ("https://x.org/p", {"type": "string", "format": "uri"}, "https://x.org/p"),
])
def test_convert_accepts(raw: str, prop: dict[str, Any], expected: Any) -> None:
    assert convert(raw, prop) == expected


@pytest.mark.parametrize("raw, prop, message", [
    ("1.5", {"type": "integer"}, "whole number"),
    ("inf", {"type": "number"}, "finite"),
    ("0", {"type": "integer", "minimum": 1}, "1 or more"),
    ("c", {"type": "string", "enum": ["a", "b"]}, "from 1 to 2"),
    ("0", {"type": "string", "enum": ["a", "b"]}, "from 1 to 2"),
    ("x" * 9, {"type": "string", "maxLength": 8}, "at most 8"),
    ("no-scheme", {"type": "string", "format": "uri"}, "absolute URI"),
    ("{}", {"type": "object"}, "cannot ask for a field of type 'object'"),
])
def test_convert_refuses(raw: str, prop: dict[str, Any], message: str) -> None:
    with pytest.raises(Invalid, match=message):
        convert(raw, prop)


def test_fill_takes_each_forms_own_keys_and_defaults() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 3},
                                               "ok": {"type": "boolean"}},
              "required": ["ok"]}
    assert fill(schema, {"ok": True, "other": 1}) == {"n": 3, "ok": True}
    with pytest.raises(Invalid, match="'n': true is not a integer"):
        fill(schema, {"ok": True, "n": True})
    with pytest.raises(Invalid, match="'ok': a list answers only a multiple choice"):
        fill(schema, {"ok": [True]})
    multi = {"type": "object", "properties": {"tags": {
        "type": "array", "maxItems": 2, "items": {"type": "string", "enum": ["a,b", "c"]}}}}
    assert fill(multi, {"tags": ["a,b", "c"]}) == {"tags": ["a,b", "c"]}  # commas kept
    with pytest.raises(Invalid, match="choose at most 2"):
        fill(multi, {"tags": ["c", "a,b", "2"]})
    assert parse_preset("decline") == "decline"
    assert parse_preset('{"a": 1}') == {"a": 1}


class _Keyboard(io.StringIO):
    """Typed lines on a terminal: what ``Asker`` reads when stdin is a TTY."""

    def isatty(self) -> bool:
        return True


def _ask(params: dict[str, Any], typed: str) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    asker = Asker("ask", _Keyboard(typed), out)
    return anyio.run(asker, params), out.getvalue()


def test_a_form_too_big_to_ask_is_cancelled() -> None:
    props = {f"f{i}": {"type": "string"} for i in range(51)}
    answer, shown = _ask({"mode": "form", "message": "Fill this",
                          "requestedSchema": {"type": "object", "properties": props}}, "")
    assert answer == {"action": "cancel"}
    assert "the form has 51 fields; mcpkit asks at most 50" in shown


def test_url_mode_shows_the_whole_url_escaped_and_can_be_declined() -> None:
    url = "https://evil.example/\x1b[8mhidden"
    answer, shown = _ask({"mode": "url", "message": "Pay", "url": url}, "n\n")
    assert answer == {"action": "decline"}
    assert "URL: https://evil.example/\\x1b[8mhidden" in shown and "\x1b" not in shown


def test_a_question_during_a_prompt_in_the_stateless_era() -> None:
    res = mcpkit("prompt", "--era", "stateless", "--stdio", EVERYTHING,
                 "test_input_required_result_prompt", "--elicit", '{"context": "tea"}')
    assert (res.returncode, res.stdout) == (0, "user:\nPrompt with context: tea\n")


def test_a_question_from_a_task_in_the_2025_era() -> None:
    """--task on stdio: a 2025-11-25 task; its question comes while the CLI waits on
    tasks/result, and the preset answers it."""
    res = mcpkit("call", "--task", "--stdio", EVERYTHING, "confirm_delete", "filename=t.txt",
                 "--elicit", '{"confirm": true}')
    assert (res.returncode, res.stdout) == (0, "Deleted t.txt\n"), res.stderr
    assert "status input_required" in res.stderr
