"""The SSE parser: the WHATWG line endings and fields MCP relies on, any chunking."""

from __future__ import annotations

import random

import pytest

from mcpkit.protocol.sse import SSEEvent, SSEParser


def parse(*chunks: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out


@pytest.mark.parametrize("sep", [b"\n", b"\r", b"\r\n"])
def test_line_endings(sep: bytes) -> None:
    stream = sep.join([b"id: 7", b"event: message", b"data: a", b"data: b", b"", b""])
    (event,) = parse(stream, b":")  # after a lone CR the parser waits for the next byte
    assert event == SSEEvent("a\nb", "message", "7", None)


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    events = parse(b"data: x\r", b"\n\r\n", b"data: y\r\n\r\n")
    assert [e.data for e in events] == ["x", "y"]


def test_priming_event_comments_retry_and_nul_ids() -> None:
    events = parse(b": comment\nid: p1\nretry: 2500\ndata:\n\nid: bad\x00\ndata: z\n\n")
    assert events[0] == SSEEvent("", "message", "p1", 2500)
    assert events[1].data == "z" and events[1].id == "p1"  # an id with NUL is ignored


def test_a_line_past_the_limit_is_refused() -> None:
    parser = SSEParser(max_line=100)
    parser.feed(b"data: " + b"x" * 90)
    with pytest.raises(ValueError, match="longer than 100"):
        parser.feed(b"x" * 20)


def test_any_chunking_gives_the_events_of_the_whole_stream() -> None:
    rng = random.Random(20261124)
    pieces = [b"data: a", b"data: \xc3\xa9", b"id: 1", b"event: e", b"retry: 10", b": c",
              b"", b"\n", b"\r", b"\r\n"]
    for _ in range(300):
        stream = b"".join(rng.choice(pieces) + rng.choice([b"\n", b"\r", b"\r\n"])
                          for _ in range(rng.randint(0, 30)))
        expected = parse(stream)
        chunks = []
        i = 0
        while i < len(stream):
            n = rng.randint(1, 7)
            chunks.append(stream[i:i + n])
            i += n
        assert parse(*chunks) == expected, stream


@pytest.mark.parametrize("value", ["\u00b2", "\u0661\u0662", "1\u00b2", "9" * 19, "9" * 5000])
def test_retry_takes_at_most_18_ascii_digits(value: str) -> None:
    """str.isdigit() accepts superscripts (int() then raised ValueError out of feed) and
    other scripts' digits; more than 4,300 digits also raised. All are ignored now."""
    parser = SSEParser()
    events = parser.feed(f"retry: {value}\ndata: x\n\n".encode())
    assert events == [SSEEvent("x", "message", None, None)] and parser.retry is None


def test_retry_of_an_undispatched_block_does_not_stick_to_the_next_event() -> None:
    parser = SSEParser()
    assert parser.feed(b"retry: 5\n\ndata: x\n\n") == [SSEEvent("x", "message", None, None)]
    assert parser.retry == 5


@pytest.mark.parametrize("tail", [b"\n\n", b"\r", b"\r\n"])
def test_a_long_line_is_refused_even_when_its_end_came_with_it(tail: bytes) -> None:
    """Refused only when it arrived in pieces, before: the chunking decided."""
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        SSEParser(max_line=10).feed(b"data: " + b"y" * 50 + tail)
