"""The Version type."""
import re
from typing import Tuple, Union

from .errors import InvalidVersion

_IDENT = r"[0-9A-Za-z-]+"
_VERSION_RE = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-(%s(?:\.%s)*))?"
    r"(?:\+(%s(?:\.%s)*))?$" % (_IDENT, _IDENT, _IDENT, _IDENT)
)


class Version:
    """An immutable semantic version.  Ordering follows semver precedence."""

    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major: int, minor: int = 0, patch: int = 0,
                 prerelease: Tuple[str, ...] = (), build: Tuple[str, ...] = ()):
        for part in (major, minor, patch):
            if not isinstance(part, int) or part < 0:
                raise InvalidVersion("version numbers must be non-negative ints")
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "prerelease", tuple(str(p) for p in prerelease))
        object.__setattr__(self, "build", tuple(str(b) for b in build))

    def __setattr__(self, name, value):
        raise AttributeError("Version is immutable")

    @classmethod
    def parse(cls, text: str) -> "Version":
        m = _VERSION_RE.match(text.strip())
        if not m:
            raise InvalidVersion("invalid version: %r" % (text,))
        major, minor, patch, pre, build = m.groups()
        prerelease = tuple(pre.split(".")) if pre else ()
        for ident in prerelease:
            if ident.isdigit() and len(ident) > 1 and ident.startswith("0"):
                raise InvalidVersion("numeric identifier with leading zero: %r" % (text,))
        return cls(int(major), int(minor), int(patch), prerelease,
                   tuple(build.split(".")) if build else ())

    @classmethod
    def coerce(cls, value: Union["Version", str]) -> "Version":
        return value if isinstance(value, Version) else cls.parse(value)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def release(self) -> "Version":
        """The version without pre-release and build parts."""
        return Version(self.major, self.minor, self.patch)

    def bump_major(self) -> "Version":
        return Version(self.major + 1, 0, 0)

    def bump_minor(self) -> "Version":
        return Version(self.major, self.minor + 1, 0)

    def bump_patch(self) -> "Version":
        # 1.2.3-rc.1 -> 1.2.3: finishing a pre-release is a patch bump
        if self.prerelease:
            return self.release()
        return Version(self.major, self.minor, self.patch + 1)

    def __str__(self) -> str:
        text = "%d.%d.%d" % (self.major, self.minor, self.patch)
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return "Version(%r)" % str(self)

    # -- ordering: delegated to compare() so there is a single source of truth

    def _compare(self, other) -> int:
        from .compare import compare

        return compare(self, other)

    def __eq__(self, other) -> bool:
        if not isinstance(other, (Version, str)):
            return NotImplemented
        return self._compare(other) == 0

    def __lt__(self, other) -> bool:
        return self._compare(other) < 0

    def __le__(self, other) -> bool:
        return self._compare(other) <= 0

    def __gt__(self, other) -> bool:
        return self._compare(other) > 0

    def __ge__(self, other) -> bool:
        return self._compare(other) >= 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))
