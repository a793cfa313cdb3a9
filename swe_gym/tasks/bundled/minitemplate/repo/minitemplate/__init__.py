"""minitemplate - a very small Jinja-flavoured template engine."""
from .errors import TemplateError, TemplateSyntaxError
from .template import Template, render

__all__ = ["Template", "TemplateError", "TemplateSyntaxError", "render"]
