"""miniargs - a tiny argparse-like command line parser."""
from .converters import choice, comma_list, integer, number
from .errors import ArgumentError
from .help import format_help, format_usage
from .parser import Parser

__all__ = [
    "ArgumentError",
    "Parser",
    "choice",
    "comma_list",
    "format_help",
    "format_usage",
    "integer",
    "number",
]
