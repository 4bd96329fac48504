"""SSEParser, property-based: any chunking, any bytes, against the event-stream rules.

The reference below reads a whole stream by the rules ``protocol/sse.py`` documents (the
WHATWG event-stream format as MCP uses it): lines end in LF, CR or CRLF, and a CR that
ends the input so far may still be half of a CRLF, so the line before it waits; ``data``
lines join with LF; ``event`` names the event (default ``message``); ``id`` sets the last
event id unless it holds NUL; ``retry`` takes ASCII digits only, 18 at most (a longer
value is no delay; it is ignored); ``:`` starts a comment;
a blank line dispatches the event if it has data or an id. A line (its content, without
the line end) longer than ``max_line`` bytes is refused with ``ValueError``, whether its
end has arrived or not, and nothing else is ever raised.
"""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import example, given
from hypothesis import strategies as st

from mcpkit.protocol.sse import SSEEvent, SSEParser, encode_event

DEFAULT_MAX_LINE = SSEParser().max_line

_LINE_END = re.compile(rb"\r\n|\r|\n")
_VALUE = st.text(
    st.sampled_from("ab 7:\x00é\u00b2\u0661\ufeff") | st.characters(codec="utf-8"), max_size=8
)
_RETRY = st.one_of(  # digits as str.isdigit sees them: ASCII, superscript, Arabic-Indic, N'Ko
    st.text(st.sampled_from("0123456789"), min_size=1, max_size=6),
    st.text(st.sampled_from("0123456789\u00b2\u0661\u0662\u06f3\u07c0"), max_size=4),
    _VALUE,
)
_FIELD = st.sampled_from(["data", "event", "id", "retry", "", "dat", "DATA", ":", ": x"])


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    name = draw(_FIELD)
    sep = draw(st.sampled_from(["", ":", ": ", ":  "]))
    value = draw(_RETRY if name == "retry" else _VALUE)
    return (name + sep + value).encode()


streams = st.lists(
    st.one_of(
        st.tuples(_line(), st.sampled_from([b"\n", b"\r", b"\r\n"])).map(b"".join),
        st.sampled_from([b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r"]),
        st.binary(max_size=6),
    ),
    max_size=25,
).map(b"".join)
cut_points = st.lists(st.integers(min_value=1, max_value=10_000), max_size=10)


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    inner = {c % len(stream) for c in cuts if len(stream) > 1 and c % len(stream)}
    bounds = [0, *sorted(inner), len(stream)]
    return [stream[a:b] for a, b in pairwise(bounds) if b > a]


class TooLong(Exception):
    pass


State = tuple[list[SSEEvent], str | None, int | None]


def reference(stream: bytes, max_line: int = DEFAULT_MAX_LINE) -> State:
    """Events, last event id and retry of a whole stream; ``TooLong`` for a long line."""
    held_cr = stream.endswith(b"\r")
    *lines, tail = _LINE_END.split(stream[:-1] if held_cr else stream)
    if any(len(line) > max_line for line in [*lines, tail]):
        raise TooLong
    events: list[SSEEvent] = []
    last_id: str | None = None
    retry: int | None = None
    data: list[str] = []
    event_type, id_in_block, retry_in_block = "", False, None
    for raw in lines:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            if data or id_in_block:
                events.append(SSEEvent("\n".join(data), event_type or "message", last_id,
                                       retry_in_block))
            data, event_type, id_in_block, retry_in_block = [], "", False, None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
        elif name == "id" and "\x00" not in value:
            last_id, id_in_block = value, True
        elif name == "retry" and 0 < len(value) <= 18 and all(c in "0123456789" for c in value):
            retry = retry_in_block = int(value)
    return events, last_id, retry


def parse(chunks: list[bytes], max_line: int = DEFAULT_MAX_LINE) -> State:
    parser = SSEParser(max_line)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events, parser.last_event_id, parser.retry


@given(streams, cut_points)
def test_any_chunking_gives_the_events_of_the_whole_stream(
    stream: bytes, cuts: list[int]
) -> None:
    assert parse(chunked(stream, cuts)) == parse([stream])


@example(b"retry: \xc2\xb2\n\n", []).via("a superscript two is a digit to str.isdigit")
@example(b"retry: \xd9\xa1\xd9\xa2\ndata: x\n\n", []).via("Arabic-Indic digits")
@example(b"retry: 5\n\ndata: x\n\n", []).via("a retry in a block that is not dispatched")
@given(streams, cut_points)
def test_events_follow_the_event_stream_rules(stream: bytes, cuts: list[int]) -> None:
    assert parse(chunked(stream, cuts)) == reference(stream)


@example(b"data: " + b"y" * 50 + b"\n\n", 10, []).via("a long line complete in one chunk")
@example(b"data: " + b"y" * 50 + b"\r", 10, []).via("a long line waiting on its CR")
@example(b"retry: " + b"9" * 5000 + b"\n\n", DEFAULT_MAX_LINE, [])
@given(streams, st.integers(min_value=0, max_value=24) | st.just(DEFAULT_MAX_LINE), cut_points)
def test_any_bytes_give_the_events_or_the_documented_error(
    stream: bytes, max_line: int, cuts: list[int]
) -> None:
    """Whatever the bytes and the chunking: the events of the rules, or ``ValueError``
    exactly when a line is longer than ``max_line``; no other exception."""
    try:
        expected: State | None = reference(stream, max_line)
    except TooLong:
        expected = None
    try:
        got: State | None = parse(chunked(stream, cuts), max_line)
    except ValueError as exc:
        assert f"longer than {max_line} bytes" in str(exc)
        got = None
    assert got == expected


_ONE_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30)


@given(_ONE_LINE, st.none() | _ONE_LINE.filter(lambda s: "\x00" not in s),
       st.none() | st.integers(min_value=0, max_value=10**9), cut_points)
def test_an_encoded_event_parses_back(
    data: str, event_id: str | None, retry: int | None, cuts: list[int]
) -> None:
    stream = encode_event(data.encode(), event_id, retry)
    assert parse(chunked(stream, cuts)) == (
        [SSEEvent(data, "message", event_id, retry)], event_id, retry
    )
