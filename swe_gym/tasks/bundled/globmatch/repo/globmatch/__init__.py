"""globmatch - path-aware glob matching."""
from .filter import PathSpec, filter_paths
from .match import compile_pattern, match
from .translate import translate
from .util import normalize_path

__all__ = ["PathSpec", "compile_pattern", "filter_paths", "match", "normalize_path", "translate"]
