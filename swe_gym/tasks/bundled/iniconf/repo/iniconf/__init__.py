"""iniconf - INI configuration files with interpolation."""
from .config import Config
from .errors import (
    ConfigError,
    InterpolationError,
    NoOptionError,
    NoSectionError,
    ParseError,
)

__all__ = [
    "Config",
    "ConfigError",
    "InterpolationError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
]
