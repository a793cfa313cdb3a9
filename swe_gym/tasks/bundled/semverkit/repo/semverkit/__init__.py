"""semverkit - Semantic Versioning 2.0.0 for Python."""
from .compare import compare
from .errors import InvalidRange, InvalidVersion
from .ranges import max_satisfying, satisfies
from .version import Version

__all__ = [
    "InvalidRange",
    "InvalidVersion",
    "Version",
    "compare",
    "max_satisfying",
    "satisfies",
]
