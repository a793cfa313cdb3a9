"""Include/exclude filtering of path lists."""
from typing import Iterable, List, Optional, Sequence

from .match import match


class PathSpec:
    """A set of include and exclude patterns.

    A path is selected if it matches at least one include pattern (or there
    are no include patterns) and no exclude pattern.
    """

    def __init__(self, include: Optional[Sequence[str]] = None,
                 exclude: Optional[Sequence[str]] = None,
                 case_sensitive: bool = True):
        self.include = list(include or [])
        self.exclude = list(exclude or [])
        self.case_sensitive = case_sensitive

    def matches(self, path: str) -> bool:
        cs = self.case_sensitive
        if self.include and not any(match(path, p, cs) for p in self.include):
            return False
        return not any(match(path, p, cs) for p in self.exclude)

    def filter(self, paths: Iterable[str]) -> List[str]:
        return [p for p in paths if self.matches(p)]


def filter_paths(paths: Iterable[str], include: Optional[Sequence[str]] = None,
                 exclude: Optional[Sequence[str]] = None,
                 case_sensitive: bool = True) -> List[str]:
    return PathSpec(include, exclude, case_sensitive).filter(paths)
