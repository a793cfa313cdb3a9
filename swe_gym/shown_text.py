r"""Bytes as the text an agent reads, and that text back as the same bytes.

Output, files and patches are bytes; an agent reads and writes text. `to_text` shows every character
that is valid UTF-8 as itself (accents, box drawing, emoji, control characters: what the file holds),
and marks what is not, so that no two byte strings look alike:

- a byte that is not part of valid UTF-8 becomes U+FFFD followed by ``x`` and its two hex digits
  (``caf\xe9`` in Latin-1 shows as ``caf�xe9``);
- a U+FFFD that the bytes really hold is doubled (``��``), so it cannot be read as such a mark.

`to_bytes` inverts it: ``to_bytes(to_text(data)) == data`` for all bytes, so text copied from any
observation names the bytes it came from (the editor's ``str_replace`` finds them, a bash action gets
them). A U+FFFD that starts no mark stands for itself; lone surrogates (Python's ``surrogateescape``)
are accepted as the bytes they stand for.

>>> to_text("café ✓".encode()), to_text(b"caf\xe9"), to_text("caf\\xe9".encode())
('café ✓', 'caf�xe9', 'caf\\xe9')
>>> to_bytes("caf�xe9"), to_bytes("a �� b")
(b'caf\xe9', b'a \xef\xbf\xbd b')
"""

from __future__ import annotations

import codecs
import re

MARK = "\ufffd"
_MARK_BYTES = MARK.encode()
_ERRORS = "swe_gym.shown_text"
_PARSE = re.compile(f"{MARK}(?:({MARK})|x([89a-f][0-9a-f]))")  # only bytes >= 0x80 can be invalid


def _mark_bytes(error: UnicodeError) -> tuple[str | bytes, int]:
    """Decoding: each bad byte as its mark. Encoding: a surrogate as its byte (``surrogateescape``'s range)
    or, for one no byte decodes to, its 3-byte form."""
    if isinstance(error, UnicodeDecodeError):
        bad = error.object[error.start : error.end]
        return "".join(f"{MARK}x{byte:02x}" for byte in bad), error.end
    if isinstance(error, UnicodeEncodeError):
        chars = error.object[error.start : error.end]
        out = b"".join(
            bytes([ord(c) - 0xDC00]) if 0xDC80 <= ord(c) <= 0xDCFF else c.encode("utf-8", "surrogatepass")
            for c in chars
        )
        return out, error.end
    raise error


codecs.register_error(_ERRORS, _mark_bytes)


def to_text(data: bytes) -> str:
    """``data`` as text: valid UTF-8 as is, other bytes and real U+FFFDs marked (see the module)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return text.replace(MARK, MARK * 2) if MARK in text else text
    # U+FFFD's three bytes are a whole character wherever they occur, so splitting on them breaks no sequence.
    return (MARK * 2).join(part.decode("utf-8", _ERRORS) for part in data.split(_MARK_BYTES))


def _unmark(found: re.Match[str]) -> str:
    return MARK if found.group(1) else chr(0xDC00 + int(found.group(2), 16))


def to_bytes(text: str) -> bytes:
    """The bytes ``text`` shows (the inverse of `to_text`)."""
    if MARK in text:
        text = _PARSE.sub(_unmark, text)
    return text.encode("utf-8", _ERRORS)


def as_shown(text: str) -> str:
    """``text`` whose lone surrogates stand for bytes (``surrogateescape``, as a patch that is not UTF-8 is
    read) shown as `to_text` shows those bytes: valid Unicode, which JSON and UTF-8 carry, with
    ``to_bytes(as_shown(text))`` the bytes ``text`` stood for. Text with no surrogate and no U+FFFD is
    returned as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return to_text(text.encode("utf-8", _ERRORS))
    return to_text(text.encode("utf-8")) if MARK in text else text
