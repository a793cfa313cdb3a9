"""``${option}`` / ``${section:option}`` substitution."""
import re

from .errors import InterpolationError
from .parser import DEFAULT, Data

_REF_RE = re.compile(r"\$(?:(\$)|\{([^}:]+)(?::([^}]+))?\})")
MAX_DEPTH = 10


def _raw_lookup(data: Data, section: str, option: str) -> str:
    if section in data and option in data[section]:
        return data[section][option]
    if option in data[DEFAULT]:
        return data[DEFAULT][option]
    raise InterpolationError("bad reference ${%s:%s}" % (section, option))


def interpolate(data: Data, section: str, value: str, depth: int = 0) -> str:
    """Expand references in *value*, which belongs to *section*."""
    if depth > MAX_DEPTH:
        raise InterpolationError("interpolation too deep (cycle?) in [%s]" % section)

    def replace(m):
        if m.group(1):
            return "$"
        if m.group(3):
            ref_section, option = m.group(2).strip(), m.group(3).strip()
        else:
            ref_section, option = section, m.group(2).strip()
        raw = _raw_lookup(data, ref_section, option)
        return interpolate(data, ref_section, raw, depth + 1)

    return _REF_RE.sub(replace, value)
