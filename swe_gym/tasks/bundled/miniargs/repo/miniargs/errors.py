class ArgumentError(Exception):
    """Raised for any problem with the command line being parsed."""

    def __init__(self, message: str, option: str = None):
        super().__init__(message)
        self.message = message
        self.option = option
