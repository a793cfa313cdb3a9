"""Value converters.  A converter takes a string and returns a value, or
raises ``ValueError`` with a human readable message."""
from typing import Callable, List


def integer(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise ValueError("invalid int value: %r" % text) from None


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("invalid number: %r" % text) from None


def choice(*allowed: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in allowed:
            raise ValueError(
                "invalid choice: %r (choose from %s)" % (text, ", ".join(allowed))
            )
        return text

    convert.__name__ = "choice"
    return convert


def comma_list(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
