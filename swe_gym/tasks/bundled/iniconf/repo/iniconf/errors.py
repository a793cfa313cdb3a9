class ConfigError(Exception):
    pass


class ParseError(ConfigError):
    def __init__(self, message: str, lineno: int):
        super().__init__("line %d: %s" % (lineno, message))
        self.lineno = lineno


class NoSectionError(ConfigError, KeyError):
    def __init__(self, section: str):
        ConfigError.__init__(self, "no section: %r" % (section,))
        self.section = section

    def __str__(self) -> str:
        return self.args[0]


class NoOptionError(ConfigError, KeyError):
    def __init__(self, section: str, option: str):
        ConfigError.__init__(self, "no option %r in section %r" % (option, section))
        self.section = section
        self.option = option

    def __str__(self) -> str:
        return self.args[0]


class InterpolationError(ConfigError):
    pass
