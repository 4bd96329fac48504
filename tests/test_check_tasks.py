"""``mcpkit check`` judging tasks (the ``TASKS.*`` rules): against mcpkit's everything
server (every rule passes in both eras, over stdio and HTTP), against a small good tasks
server in each ``--call-tools`` mode (readonly runs no task), and against a family of
relays over that server that each break one rule (that rule, and only it, fails; the
message it fails is not reported again by ``WIRE.schema``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mcpkit.check import Report, Target, run_check
from mcpkit.check.report import FORMATS, render
from mcpkit.check.rules import RULES, SECTION_TASKS
from mcpkit.check.taskjudge import NEED_RUN, id_bits, task_problem
from mcpkit.check.taskprobe import RULE_IDS
from mcpkit.protocol.tasks import CORE, EXT
from tests.servers.check_tasks_family import DEFECTS
from tests.support.http import LiveServer, everything_server

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
EVERYTHING = [PY, str(ROOT / "examples" / "everything.py")]
GOOD = [PY, str(ROOT / "tests" / "servers" / "check_tasks_good.py")]
RELAY = ROOT / "tests" / "servers" / "check_tasks_family.py"


def check(target: Target, era: str = "both", call_tools: str = "all") -> Report:
    return anyio.run(run_check, target, era, call_tools)  # type: ignore[arg-type]


def verdicts(report: Report) -> dict[tuple[str | None, str], str]:
    return {(f.era, f.rule): f.verdict for f in report.findings if f.rule.startswith("TASKS.")}


def explain(report: Report) -> str:
    return "\n".join(f"{f.era} {f.rule} {f.verdict}: {f.message}\n    {f.evidence[:400]}"
                     for f in report.findings if f.rule.startswith(("TASKS.", "WIRE.")))


def assert_all_pass(report: Report) -> None:
    got = verdicts(report)
    want = {("stateful", r): "pass" for r in RULE_IDS}
    want |= {("stateless", r): "pass" for r in RULE_IDS}
    want[("stateless", "TASKS.list")] = "n/a"  # the extension has no tasks/list
    assert got == want, explain(report)
    wire = {f.era: f.verdict for f in report.findings if f.rule == "WIRE.schema"}
    assert wire == {"stateful": "pass", "stateless": "pass"}, explain(report)


def test_the_catalogue_documents_every_task_rule() -> None:
    assert set(RULE_IDS) == {r for r in RULES if r.startswith("TASKS.")}
    docs = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    for rule in RULE_IDS:
        assert RULES[rule].section == SECTION_TASKS and RULES[rule].spec
        assert f"`{rule}`" in docs, f"docs/check.md does not explain {rule}"


def test_everything_stdio_passes_every_task_rule_in_both_eras() -> None:
    report = check(Target(command=EVERYTHING))
    assert_all_pass(report)
    for fmt in FORMATS:  # the findings reach every report format (csv is the matrix only)
        if fmt != "csv":
            assert "TASKS.state-machine" in render(report, fmt, verbose=True), fmt


def test_everything_http_passes_every_task_rule_in_both_eras() -> None:
    with LiveServer(everything_server().asgi_app()) as live:
        report = check(Target(url=live.url))
    assert_all_pass(report)


def test_readonly_runs_no_task_but_judges_what_runs_nothing() -> None:
    report = check(Target(command=GOOD), "stateful", "readonly")
    got = verdicts(report)
    for rule in NEED_RUN:
        assert got[("stateful", rule)] == "n/a", explain(report)
    for rule in ("TASKS.unknown-id", "TASKS.plain-call", "TASKS.list"):
        assert got[("stateful", rule)] == "pass", explain(report)
    listed = next(f for f in report.findings if f.rule == "TASKS.list")
    assert "(0 task(s)" in listed.message  # no task was created


def test_call_tools_none_judges_no_task_rule() -> None:
    report = check(Target(command=GOOD), "stateless", "none")
    assert set(verdicts(report).values()) == {"n/a"}


def test_good_tasks_server_passes_in_both_eras() -> None:
    assert_all_pass(check(Target(command=GOOD)))


@pytest.mark.parametrize("key", list(DEFECTS))
def test_each_broken_tasks_server_fails_exactly_its_rule(key: str) -> None:
    rule, _, form = key.partition("@")
    # the stateless era learns which tool is required from the handshake era's listing
    era = "both" if key == "TASKS.plain-call@stateless" else form or "stateful"
    report = check(Target(command=[PY, str(RELAY), key]), era)
    failed = {(f.era, f.rule) for f in report.findings if f.verdict == "fail"
              and (f.rule.startswith("TASKS.") or f.rule == "WIRE.schema")}
    assert failed == {(form or "stateful", rule)}, explain(report)


def test_the_family_breaks_every_task_rule() -> None:
    assert {k.partition("@")[0] for k in DEFECTS} == set(RULE_IDS)


# ------------------------------------------------------------------------------ units


def test_id_entropy_estimates() -> None:
    assert id_bits("task-1") < 64
    assert id_bits("00000000000000000042") < 70
    assert id_bits("550e8400-e29b-41d4-a716-446655440000") >= 120
    assert id_bits("GAqlQkDNARqDWeOrk3y9TIb6La9P3siZ") >= 180
    assert id_bits("---") == 0


TASK = {"taskId": "t" * 32, "status": "working", "createdAt": "2026-01-02T03:04:05.678Z",
        "lastUpdatedAt": "2026-01-02T03:04:05.678Z", "ttl": 60000, "pollInterval": 500}


@pytest.mark.parametrize(("change", "problem"), [
    ({}, ""),
    ({"status": "done"}, "status 'done' is not one of"),
    ({"taskId": 7}, "taskId is missing"),
    ({"createdAt": "2026-01-02"}, "createdAt '2026-01-02' is not an ISO 8601"),
    ({"lastUpdatedAt": "2026-01-02T03:04:05"}, "not an ISO 8601"),  # no zone
    ({"lastUpdatedAt": "2026-01-01T00:00:00Z"}, "lastUpdatedAt is before createdAt"),
    ({"ttl": 1.5}, "ttl 1.5 is not a whole number"),
    ({"ttl": None}, ""),
    ({"pollInterval": -1}, "pollInterval -1 is not a whole number"),
])
def test_task_problems_in_the_core_form(change: dict[str, object], problem: str) -> None:
    got = task_problem({**TASK, **change}, CORE)
    assert (problem in got and bool(got)) if problem else got == ""


def test_task_problems_name_the_other_generation() -> None:
    assert "ttlMs (the actual time to live" in task_problem(TASK, EXT)
    view = {k: v for k, v in TASK.items() if k not in ("ttl", "pollInterval")}
    assert task_problem({**view, "ttlMs": 1000, "pollInterval": 5}, EXT).startswith(
        "pollInterval is the other generation's name")
    assert "ttl (the actual" in task_problem({k: v for k, v in TASK.items() if k != "ttl"}, CORE)
