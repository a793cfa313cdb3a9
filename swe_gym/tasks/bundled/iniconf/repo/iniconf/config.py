"""The Config object."""
from typing import Any, Dict, List, Optional

from .errors import NoOptionError, NoSectionError
from .interpolate import interpolate
from .parser import DEFAULT, Data, normalize_key, parse

_MISSING = object()
_BOOLEANS = {"1": True, "yes": True, "true": True, "on": True,
             "0": False, "no": False, "false": False, "off": False}


class Config:
    def __init__(self, data: Optional[Data] = None):
        self._data: Data = {DEFAULT: {}}
        for section, options in (data or {}).items():
            self._data.setdefault(section, {})
            for key, value in options.items():
                self._data[section][normalize_key(key)] = str(value)

    @classmethod
    def from_string(cls, text: str) -> "Config":
        cfg = cls()
        cfg._data = parse(text)
        return cfg

    @classmethod
    def from_file(cls, path: str, encoding: str = "utf-8") -> "Config":
        with open(path, encoding=encoding) as fh:
            return cls.from_string(fh.read())

    # -- structure ----------------------------------------------------------

    def sections(self) -> List[str]:
        return [s for s in self._data if s != DEFAULT]

    def has_section(self, section: str) -> bool:
        return section in self._data and section != DEFAULT

    def add_section(self, section: str) -> None:
        if section == DEFAULT or section in self._data:
            raise ValueError("section %r already exists" % section)
        self._data[section] = {}

    def options(self, section: str) -> List[str]:
        self._section(section)
        merged = dict(self._data[DEFAULT])
        merged.update(self._data[section])
        return list(merged)

    def has_option(self, section: str, option: str) -> bool:
        key = normalize_key(option)
        return self.has_section(section) and (
            key in self._data[section] or key in self._data[DEFAULT]
        )

    def _section(self, section: str) -> Dict[str, str]:
        if section not in self._data:
            raise NoSectionError(section)
        return self._data[section]

    # -- values ---------------------------------------------------------------

    def get(self, section: str, option: str, fallback: Any = _MISSING, raw: bool = False) -> Any:
        key = normalize_key(option)
        options = self._section(section)
        if key in options:
            value = options[key]
        elif key in self._data[DEFAULT]:
            value = self._data[DEFAULT][key]
        elif fallback is not _MISSING:
            return fallback
        else:
            raise NoOptionError(section, option)
        return value if raw else interpolate(self._data, section, value)

    def getint(self, section: str, option: str, fallback: Any = _MISSING) -> Any:
        value = self.get(section, option, fallback)
        return value if value is fallback else int(value)

    def getfloat(self, section: str, option: str, fallback: Any = _MISSING) -> Any:
        value = self.get(section, option, fallback)
        return value if value is fallback else float(value)

    def getboolean(self, section: str, option: str, fallback: Any = _MISSING) -> Any:
        value = self.get(section, option, fallback)
        if value is fallback:
            return value
        try:
            return _BOOLEANS[value.strip().lower()]
        except KeyError:
            raise ValueError("not a boolean: %r" % value) from None

    def getlist(self, section: str, option: str, fallback: Any = _MISSING) -> Any:
        """Split on commas and newlines, dropping empty items."""
        value = self.get(section, option, fallback)
        if value is fallback:
            return value
        return [item.strip() for item in value.replace("\n", ",").split(",") if item.strip()]

    def set(self, section: str, option: str, value: Any) -> None:
        if section != DEFAULT:
            self._section(section)
        self._data[section][option] = str(value)

    def remove_option(self, section: str, option: str) -> bool:
        return self._section(section).pop(normalize_key(option), None) is not None

    # -- output ---------------------------------------------------------------

    def to_string(self) -> str:
        chunks = []
        for section, options in self._data.items():
            if section == DEFAULT and not options:
                continue
            lines = ["[%s]" % section]
            for key, value in options.items():
                lines.append("%s = %s" % (key, value.replace("\n", "\n    ")))
            chunks.append("\n".join(lines) + "\n")
        return "\n".join(chunks)
