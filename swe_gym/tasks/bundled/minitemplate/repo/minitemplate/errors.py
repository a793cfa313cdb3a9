class TemplateError(Exception):
    """Base class for template errors."""


class TemplateSyntaxError(TemplateError):
    def __init__(self, message: str, line: int):
        super().__init__("line %d: %s" % (line, message))
        self.message = message
        self.line = line
