"""Errors caused by what the user asked for. The CLI prints these as one line, no traceback."""


class UserError(Exception):
    """A mistake in the request (unknown space, malformed shape, bad storage URL, ...)."""
