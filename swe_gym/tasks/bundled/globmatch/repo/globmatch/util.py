"""Path helpers."""
import re

_MULTI_SLASH = re.compile(r"/{2,}")


def normalize_path(path: str) -> str:
    """Use forward slashes, collapse ``//`` and drop a leading ``./``."""
    path = _MULTI_SLASH.sub("/", path.replace("\\", "/"))
    while path.startswith("./"):
        path = path[2:]
    return path
