class InvalidVersion(ValueError):
    """The string is not a valid semantic version."""


class InvalidRange(ValueError):
    """The string is not a valid version range."""
