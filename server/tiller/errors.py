"""One exception base class for the server; errors carry fields a user can act on."""

from __future__ import annotations


class TillerError(Exception):
    """Base of every error the server raises on purpose.

    ``code`` is a stable machine-readable tag; ``message`` says what to do.
    """

    def __init__(self, message: str, *, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class InvalidParams(TillerError):
    """Bad params of a client request: answered as JSON-RPC -32602."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="invalid_params")


class ConfigError(TillerError):
    """A wrong ``initializationOptions`` key: answered as an ``initialize`` error."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"initializationOptions.{key}: {message}", code="config")
        self.key = key


class ToolInputError(TillerError):
    """A tool input the model got wrong; becomes an error tool_result."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="tool_input")


class LanguageServerFailed(TillerError):
    """A language server could not start, or exited; ``message`` says which and why;
    ``lasting``: starting it again cannot help (its program is missing)."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message, code="language_server")
        self.lasting = lasting
