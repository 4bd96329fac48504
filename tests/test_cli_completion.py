"""``mcpkit completion bash|zsh|fish``, ``mcpkit --version`` and the client commands'
``--help`` (argument syntax, targets, examples).

The completion scripts are generated from the parser; each is checked by its own shell
(``bash -n``, ``zsh -n``, ``fish -n``) and then used: bash's function is called with
``COMP_WORDS`` set in a bash subprocess, fish's completions are asked with
``complete -C``, and zsh loads its script under ``compinit``. A shell that is not
installed skips its test, saying so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcpkit.cli import _parser

from .support.daemon import require
from .test_cli import mcpkit, ok


def _shell(name: str) -> str:
    return require(name, name, "checking the completion script")


def _script(shell: str, tmp_path: Path) -> Path:
    path = tmp_path / f"mcpkit.{shell}"
    path.write_text(ok("completion", shell))
    return path


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_parses(shell: str, tmp_path: Path) -> None:
    res = subprocess.run([_shell(shell), "-n", str(_script(shell, tmp_path))],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr


def _bash_complete(script: Path, *words: str) -> list[str]:
    """What bash's completion function offers for the command line ``words`` (the last
    word is the one being completed)."""
    array = " ".join(f"'{w}'" for w in words)
    code = (f"source {script}\nCOMP_WORDS=({array})\nCOMP_CWORD={len(words) - 1}\n"
            "_mcpkit\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    res = subprocess.run([_shell("bash"), "--norc", "-c", code], capture_output=True,
                         text=True, timeout=30, cwd=script.parent)
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line]


def test_bash_completes_commands_options_and_choices(tmp_path: Path) -> None:
    script = _script("bash", tmp_path)
    commands = _bash_complete(script, "mcpkit", "")
    assert {"run", "call", "list", "read", "prompt", "tasks", "check", "completion",
            "--version"} <= set(commands)
    assert _bash_complete(script, "mcpkit", "ca") == ["call"]
    assert _bash_complete(script, "mcpkit", "list", "") == [
        "tools", "resources", "templates", "prompts"]
    assert _bash_complete(script, "mcpkit", "list", "tools", "") == []  # kind given
    assert _bash_complete(script, "mcpkit", "call", "--era", "s") == ["stateful", "stateless"]
    assert _bash_complete(script, "mcpkit", "call", "--el") == ["--elicit"]
    assert _bash_complete(script, "mcpkit", "check", "--format", "j") == ["json", "junit"]
    assert _bash_complete(script, "mcpkit", "completion", "") == ["bash", "zsh", "fish"]
    (tmp_path / "server.py").write_text("")
    assert _bash_complete(script, "mcpkit", "run", "serv") == ["server.py"]  # a FILE


def test_fish_completes_commands_and_choices(tmp_path: Path) -> None:
    script = _script("fish", tmp_path)

    def complete(line: str) -> list[str]:
        res = subprocess.run([_shell("fish"), "--no-config", "-c",
                              f"source {script}; complete -C '{line}'"],
                             capture_output=True, text=True, timeout=30)
        assert res.returncode == 0, res.stderr
        return [row.split("\t")[0] for row in res.stdout.splitlines()]

    assert complete("mcpkit ca") == ["call"]
    assert complete("mcpkit list ") == ["prompts", "resources", "templates", "tools"]
    assert complete("mcpkit call --era ") == ["auto", "stateful", "stateless"]
    assert "--json" in complete("mcpkit tasks list --j")


def test_zsh_script_loads_under_compinit(tmp_path: Path) -> None:
    script = _script("zsh", tmp_path)
    code = (f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump && source "
            f"{script} && print -r -- $_comps[mcpkit]")
    res = subprocess.run([_shell("zsh"), "-f", "-c", code], capture_output=True, text=True,
                         timeout=30)
    assert (res.returncode, res.stdout.strip(), res.stderr) == (0, "_mcpkit", "")


def test_completion_needs_a_known_shell() -> None:
    res = mcpkit("completion", "tcsh")
    assert res.returncode == 2 and "invalid choice: 'tcsh'" in res.stderr


def test_version() -> None:
    from importlib.metadata import version

    out = ok("--version")
    assert out == f"mcpkit {version('mcpkit')} (MCP 2024-11-05 to 2026-07-28)\n"


@pytest.mark.parametrize("command", ["call", "read", "prompt", "list", "tasks"])
def test_client_help_shows_target_syntax_and_examples(command: str) -> None:
    out = ok(command, "--help")
    assert "(--stdio COMMAND | URL)" in out.split("\n")[0]  # the usage line
    assert "--stdio COMMAND" in out and "--header" in out and "--token" in out
    assert "examples:\n  mcpkit " + command in out
    assert "--json prints one JSON document:" in out
    assert "--elicit '{\"confirm\": true}'" in out
    if command in ("call", "prompt"):
        assert "key=value" in out and "key:=JSON" in out


def test_every_target_command_takes_the_same_target_options() -> None:
    """list, call, read, prompt, tasks and check all take --stdio, --header and --token."""
    import argparse

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("list", "call", "read", "prompt", "tasks", "check"):
        flags = {f for a in sub.choices[name]._actions for f in a.option_strings}
        assert {"--stdio", "--header", "--token", "--timeout"} <= flags, name
