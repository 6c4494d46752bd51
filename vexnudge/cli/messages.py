"""Messages several commands print the same way."""

from __future__ import annotations

from topology.settings import Settings


def kafka_unreachable(command: str, settings: Settings, exc: BaseException) -> str:
    """Why ``vexnudge COMMAND`` stopped when the broker does not answer, and what to do."""
    return (
        f"vexnudge {command}: cannot reach Kafka at {settings.kafka_bootstrap_servers}: {exc}\n"
        "Start the local stack with `vexnudge stack up` or set KAFKA_BOOTSTRAP_SERVERS."
    )
