"""LineBuffer: newline framing for stdio, fed arbitrary chunks."""

from __future__ import annotations

import pytest

from mcpkit.protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, TOO_LARGE, LineBuffer


def test_default_limit() -> None:
    assert LineBuffer().max_size == DEFAULT_MAX_MESSAGE_SIZE == 4 * 1024 * 1024


def test_splits_complete_lines() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert buf.pending == 0


def test_keeps_unterminated_tail_until_newline() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert buf.pending == 4
    assert buf.feed(b":2}") == []
    assert buf.pending == 7
    assert buf.feed(b"\n") == [b'{"b":2}']
    assert buf.pending == 0


def test_byte_at_a_time() -> None:
    buf = LineBuffer()
    out = []
    for i in range(len(data := b'{"x":"y"}\r\n{}\n')):
        out += buf.feed(data[i : i + 1])
    assert out == [b'{"x":"y"}', b"{}"]
    assert buf.pending == 0


def test_crlf_is_stripped() -> None:
    buf = LineBuffer()
    assert buf.feed(b"one\r\ntwo\r\n") == [b"one", b"two"]


def test_crlf_split_across_feeds() -> None:
    buf = LineBuffer()
    assert buf.feed(b"one\r") == []
    assert buf.feed(b"\ntwo\r\n") == [b"one", b"two"]


def test_blank_and_whitespace_lines_are_ignored() -> None:
    buf = LineBuffer()
    assert buf.feed(b"\n\r\n   \n\t\r\nx\n\n") == [b"x"]


def test_inner_carriage_return_is_kept() -> None:
    # Only a trailing \r belongs to the line ending.
    buf = LineBuffer()
    assert buf.feed(b"a\rb\n") == [b"a\rb"]


def test_eof_delivers_unterminated_last_line() -> None:
    buf = LineBuffer()
    assert buf.feed(b'{"a":1}\n{"b":2}') == [b'{"a":1}']
    assert buf.feed(b"") == [b'{"b":2}']
    assert buf.pending == 0
    # A second EOF has nothing more to give.
    assert buf.feed(b"") == []


def test_eof_strips_trailing_cr_of_last_line() -> None:
    buf = LineBuffer()
    assert buf.feed(b"last\r") == []
    assert buf.feed(b"") == [b"last"]


def test_eof_with_empty_or_blank_tail() -> None:
    assert LineBuffer().feed(b"") == []
    buf = LineBuffer()
    assert buf.feed(b"x\n  ") == [b"x"]
    assert buf.feed(b"") == []


def test_line_exactly_at_limit_is_accepted() -> None:
    buf = LineBuffer(max_size=10)
    assert buf.feed(b"0123456789\n") == [b"0123456789"]
    buf = LineBuffer(max_size=10)
    assert buf.feed(b"0123456789") == []
    assert buf.feed(b"\n") == [b"0123456789"]


def test_oversized_line_in_one_feed() -> None:
    buf = LineBuffer(max_size=10)
    assert buf.feed(b"x" * 11 + b"\n{}\n") == [TOO_LARGE, b"{}"]
    assert buf.pending == 0


def test_oversized_line_between_good_lines() -> None:
    buf = LineBuffer(max_size=10)
    assert buf.feed(b"a\n" + b"y" * 50 + b"\nb\n") == [b"a", TOO_LARGE, b"b"]


def test_oversized_line_spanning_several_feeds_reports_once() -> None:
    buf = LineBuffer(max_size=10)
    assert buf.feed(b"good\n0123456") == [b"good"]
    assert buf.pending == 7
    # Crosses the limit without a newline: reported now, content dropped.
    assert buf.feed(b"789abc") == [TOO_LARGE]
    assert buf.pending == 0
    # More of the same line: dropped silently, memory stays bounded.
    for _ in range(5):
        assert buf.feed(b"z" * 100) == []
        assert buf.pending == 0
    # The newline ends the oversized line; the next line parses normally.
    assert buf.feed(b"zz\n{}") == []
    assert buf.pending == 2
    assert buf.feed(b"\n") == [b"{}"]


def test_oversized_line_ending_exactly_at_chunk_boundary() -> None:
    buf = LineBuffer(max_size=4)
    assert buf.feed(b"abcdefgh") == [TOO_LARGE]
    assert buf.feed(b"\n") == []
    assert buf.feed(b"ok\n") == [b"ok"]


def test_two_oversized_lines_each_reported() -> None:
    buf = LineBuffer(max_size=4)
    assert buf.feed(b"aaaaaaa\nbbbbbbb") == [TOO_LARGE, TOO_LARGE]
    assert buf.feed(b"bb\nc\n") == [b"c"]


def test_eof_while_skipping_oversized_line() -> None:
    buf = LineBuffer(max_size=4)
    assert buf.feed(b"aaaaaaaaa") == [TOO_LARGE]
    assert buf.feed(b"") == []
    # The buffer is usable again after EOF (state reset).
    assert buf.feed(b"ok\n") == [b"ok"]


def test_too_large_marker_repr_and_equality() -> None:
    assert repr(TOO_LARGE) == "TOO_LARGE"
    buf = LineBuffer(max_size=1)
    (marker,) = buf.feed(b"xx\n")
    assert marker == TOO_LARGE and marker.head == b"xx"  # its start, for its id


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_chunking_does_not_change_result(chunk: int) -> None:
    data = b'{"a":1}\r\n\n' + b"q" * 30 + b'\n{"b":[1,2]}\n   \n{"c":3}'
    buf = LineBuffer(max_size=16)
    out = []
    for i in range(0, len(data), chunk):
        out += buf.feed(data[i : i + chunk])
    out += buf.feed(b"")
    assert out == [b'{"a":1}', TOO_LARGE, b'{"b":[1,2]}', b'{"c":3}']


def test_any_chunking_gives_the_lines_of_the_whole_stream() -> None:
    """Feeding a stream in random pieces gives exactly what feeding it at once gives
    (limits, CRLF, blank lines, an unterminated last line, lines past the limit)."""
    import random

    rng = random.Random(20261124)
    alphabet = [b"a", b"b", b"\n", b"\r", b" ", b"{", b"}"]
    for _ in range(300):
        stream = b"".join(rng.choice(alphabet) * rng.randint(1, 12)
                          for _ in range(rng.randint(0, 60)))
        limit = rng.randint(1, 40)
        whole = LineBuffer(limit)
        expected = whole.feed(stream) + whole.feed(b"") if stream else whole.feed(b"")
        pieces = LineBuffer(limit)
        got: list[object] = []
        i = 0
        while i < len(stream):
            n = rng.randint(1, 9)
            got += pieces.feed(stream[i:i + n])
            i += n
        got += pieces.feed(b"")
        assert got == expected, (stream, limit)
