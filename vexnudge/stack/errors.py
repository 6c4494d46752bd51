"""What can go wrong while running the local stack, each error saying the fix."""

from __future__ import annotations


class StackError(Exception):
    """Root of the local stack's errors; the message is meant for an operator."""


class ToolMissing(StackError):
    """A required program (Java, Maven, PostgreSQL) is missing or too old."""


class FetchFailed(StackError):
    """Maven could not fetch the broker jars."""


class PortInUse(StackError):
    """A port the stack needs is held by a process the stack cannot use."""


class NotReady(StackError):
    """A service was started but did not become ready in time, or died."""
