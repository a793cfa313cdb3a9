"""Image-name rewriting: ordered prefix rules, e.g. to send pulls to a registry mirror.

Rules come from code or from ``SWE_GYM_IMAGE_REWRITE`` (``from=to`` pairs separated
by ``;`` or newlines). The first rule whose prefix matches wins, so list specific
prefixes before general ones. No host name lives in this repository.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict

from swe_gym.errors import ConfigError

ENV_VAR = "SWE_GYM_IMAGE_REWRITE"


class RewriteRule(BaseModel):
    model_config = ConfigDict(frozen=True)

    prefix: str
    replacement: str


class ImageRewriter(BaseModel):
    model_config = ConfigDict(frozen=True)

    rules: tuple[RewriteRule, ...] = ()

    @classmethod
    def parse(cls, text: str) -> ImageRewriter:
        rules = []
        for item in text.replace("\n", ";").split(";"):
            if not item.strip():
                continue
            prefix, sep, replacement = item.partition("=")
            if not sep or not prefix.strip():
                raise ConfigError(f"bad image rewrite rule {item!r}: expected PREFIX=REPLACEMENT")
            rules.append(RewriteRule(prefix=prefix.strip(), replacement=replacement.strip()))
        return cls(rules=tuple(rules))

    @classmethod
    def from_env(cls) -> ImageRewriter:
        return cls.parse(os.environ.get(ENV_VAR, ""))

    @classmethod
    def for_provider(cls, text: str) -> ImageRewriter:
        """A provider's own rules (its ``image_rewrite`` option) first, then the environment's."""
        return cls(rules=cls.parse(text).rules + cls.from_env().rules)

    def rewrite(self, image: str) -> str:
        for rule in self.rules:
            if image.startswith(rule.prefix):
                return rule.replacement + image[len(rule.prefix) :]
        return image


def split_tag(image: str) -> tuple[str, str]:
    """``(repository, tag)`` of an image reference, as the engine's pull and commit APIs take them.

    The docker SDK's own parser: a registry port is no tag (``host:5000/name:tag`` is
    ``("host:5000/name", "tag")``), a digest is what the engine pulls by (``name@sha256:...`` is
    ``("name", "sha256:...")``), and no tag means ``latest``.
    """
    from docker.utils import parse_repository_tag  # the SDK loads requests: only where an image is named

    repository, tag = parse_repository_tag(image)
    return repository, tag or "latest"
