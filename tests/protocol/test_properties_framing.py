"""LineBuffer, property-based: any chunking, any bytes, any line length.

The reference is the framing rule itself, written on the whole stream at once: split at
LF; a line of more than ``max_size`` bytes (its CR included) becomes one ``TOO_LARGE``;
otherwise one trailing CR is dropped and blank lines are skipped; ``feed(b"")`` ends the
input, delivering an unterminated last line as if a newline followed it.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import example, given
from hypothesis import strategies as st

from mcpkit.protocol.framing import TOO_LARGE, Line, LineBuffer

# Streams rich in what framing cares about: line ends, CRs, blanks, long runs.
_PIECES = st.one_of(
    st.binary(max_size=12),
    st.sampled_from([b"\n", b"\r", b"\r\n", b" ", b"\t", b"\r\r\n", b"\n\n", b"{}", b"x" * 40]),
)
streams = st.lists(_PIECES, max_size=30).map(b"".join)
limits = st.integers(min_value=1, max_value=48)


def reference(stream: bytes, max_size: int) -> list[Line]:
    """The lines of a complete stream (ended by EOF), straight from the framing rule."""
    *lines, tail = stream.split(b"\n")
    out: list[Line] = []
    for line in [*lines, tail]:
        if len(line) > max_size:
            out.append(TOO_LARGE)
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            out.append(line)
    return out


cut_points = st.lists(st.integers(min_value=1, max_value=10_000), max_size=12)


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    """``stream`` cut at ``cuts`` (taken modulo its length; no empty chunk: ``b""`` is
    EOF)."""
    inner = {c % len(stream) for c in cuts if len(stream) > 1 and c % len(stream)}
    bounds = [0, *sorted(inner), len(stream)]
    return [stream[a:b] for a, b in pairwise(bounds) if b > a]


def feed_all(buf: LineBuffer, chunks: list[bytes]) -> list[Line]:
    out: list[Line] = []
    for chunk in chunks:
        out += buf.feed(chunk)
        assert buf.pending <= buf.max_size, "an unfinished line outgrew the limit"
    return out


@example(b"x\r\r", 8, [1, 2]).via("a last line ending in two CRs loses one CR, as a "
                                   "terminated line does")
@given(streams, limits, cut_points)
def test_any_chunking_gives_the_lines_of_the_whole_stream(
    stream: bytes, max_size: int, cuts: list[int]
) -> None:
    chunks = chunked(stream, cuts)
    whole = LineBuffer(max_size)
    expected = whole.feed(stream) + whole.feed(b"")
    pieces = LineBuffer(max_size)
    assert feed_all(pieces, chunks) + pieces.feed(b"") == expected
    assert expected == reference(stream, max_size)


@given(streams, limits, cut_points)
def test_memory_stays_bounded_by_the_limit(stream: bytes, max_size: int, cuts: list[int]) -> None:
    buf = LineBuffer(max_size)
    feed_all(buf, chunked(stream, cuts))  # asserts ``pending`` after every feed
    buf.feed(b"")
    assert buf.pending == 0


def _fitting_line(max_size: int) -> st.SearchStrategy[bytes]:
    """A line that is not blank, has no LF and no trailing CR, and fits the limit."""
    return st.binary(min_size=1, max_size=max_size).filter(
        lambda b: b"\n" not in b and bool(b.strip()) and not b.endswith(b"\r")
    )


@given(limits, st.integers(min_value=1, max_value=200), st.data())
def test_an_oversized_line_is_refused_once_and_the_next_line_survives(
    max_size: int, excess: int, data: st.DataObject
) -> None:
    """However an oversized line arrives, it yields exactly one ``TOO_LARGE`` in its place
    and none of its bytes; the lines around it come through intact."""
    before = data.draw(st.lists(_fitting_line(max_size), max_size=4))
    after = data.draw(_fitting_line(max_size))
    big = data.draw(st.binary(min_size=max_size + excess, max_size=max_size + excess).map(
        lambda b: b.replace(b"\n", b"-")))
    stream = b"\n".join([*before, big, after]) + b"\n"
    buf = LineBuffer(max_size)
    assert feed_all(buf, chunked(stream, data.draw(cut_points))) == [*before, TOO_LARGE, after]
    assert buf.feed(b"") == []


@example(b"x\r\r", b"", 8, []).via("EOF after two CRs")
@given(streams, streams, limits, cut_points)
def test_eof_delivers_the_last_line_and_starts_afresh(
    first: bytes, second: bytes, max_size: int, cuts: list[int]
) -> None:
    """``feed(b"")`` ends the input: the unterminated last line comes out as if a newline
    followed it, a second ``b""`` yields nothing, and what is fed next is framed like a
    new stream (even after EOF cut an oversized line short)."""
    buf = LineBuffer(max_size)
    out = feed_all(buf, chunked(first, cuts)) + buf.feed(b"")
    assert out == reference(first, max_size)
    terminated = LineBuffer(max_size)
    assert terminated.feed(first + b"\n") == out, "EOF and a newline end a line alike"
    assert buf.feed(b"") == []
    assert feed_all(buf, chunked(second, cuts[::-1])) + buf.feed(b"") == reference(
        second, max_size
    )
