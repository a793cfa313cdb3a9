class RateLimited(Exception):
    """Raised when a request exceeds the limit."""

    def __init__(self, retry_after: float, key=None):
        message = "rate limited; retry after %.2fs" % retry_after
        if key is not None:
            message = "%r: %s" % (key, message)
        super().__init__(message)
        self.retry_after = retry_after
        self.key = key
