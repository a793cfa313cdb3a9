"""Property tests of the streaming output cap (the runner's `OutputCapture`) and its decoding."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from swe_gym.sandbox.backend import decode_output
from swe_gym.sandbox.runner import OutputCapture

chunks = st.lists(st.binary(max_size=300), max_size=40)


@given(chunks=chunks, limit=st.integers(min_value=0, max_value=2000))
def test_head_and_tail_kept_and_dropped_count_exact(chunks: list[bytes], limit: int) -> None:
    capture = OutputCapture(limit)
    for chunk in chunks:
        capture.feed(chunk)
    stream = b"".join(chunks)
    assert capture.total == len(stream)
    assert len(capture.head) + len(capture.tail) <= limit
    assert capture.dropped == len(stream) - len(capture.head) - len(capture.tail)
    assert bytes(capture.head) == stream[: len(capture.head)]
    assert bytes(capture.tail) == stream[len(stream) - len(capture.tail) :]
    if len(stream) <= limit:
        assert bytes(capture.head) + bytes(capture.tail) == stream and capture.dropped == 0
    else:
        assert len(capture.head) == limit // 2 and len(capture.tail) == limit - limit // 2


@given(data=st.binary(max_size=500), head=st.integers(min_value=0, max_value=500), dropped=st.integers(0, 10**9))
def test_decoding_never_raises_and_says_what_was_dropped(data: bytes, head: int, dropped: int) -> None:
    text = decode_output(data, min(head, len(data)), dropped)
    assert isinstance(text, str)
    assert (f"[... {dropped} bytes of output dropped ...]" in text) == (dropped > 0)
