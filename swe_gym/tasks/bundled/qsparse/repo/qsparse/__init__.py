"""qsparse - small, dependency-free query string parsing and encoding."""
from .decode import unquote
from .encode import quote, urlencode
from .parser import QueryStringError, parse_qs, parse_qsl
from .querydict import QueryDict

__all__ = [
    "QueryDict",
    "QueryStringError",
    "parse_qs",
    "parse_qsl",
    "quote",
    "unquote",
    "urlencode",
]
__version__ = "0.3.1"
