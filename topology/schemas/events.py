"""Ingest contract: the normalized event and the dead-letter record."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from topology.schemas.base import Record


class RejectReason(StrEnum):
    """Why a raw line (or a run's workspace) was not usable.

    The first twelve are ingest rejections, checked in this order (fixtures
    README §1 and §1b: ``duplicate_id`` is judged before the three hostile-line
    checks that follow it); the workspace reasons mark an accepted ``runProject`` whose
    program cannot be scored; ``processing_error`` is an unexpected failure
    of a stage on one record (the record is kept here, the worker goes on).
    """

    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    INVALID_RAW_MESSAGE = "invalid_raw_message"
    MISSING_STUDENT_ID = "missing_studentID"
    MISSING_SESSION_ID = "missing_sessionID"
    MISSING_TIMESTAMP = "missing_timestamp"
    MISSING_EVENT_TYPE = "missing_eventType"
    BAD_TIMESTAMP = "bad_timestamp"
    DUPLICATE_ID = "duplicate_id"
    TOO_LARGE = "too_large"
    BAD_FIELD = "bad_field"
    FUTURE_TIMESTAMP = "future_timestamp"
    NO_PROJECT = "no_project"
    PROJECT_NOT_JSON = "project_not_json"
    PROJECT_NOT_OBJECT = "project_not_object"
    WORKSPACE_NOT_STRING = "workspace_not_string"
    XML_ERROR = "xml_error"
    NOT_COMPARABLE = "not_comparable"
    PROCESSING_ERROR = "processing_error"
    SCHEMA_ERROR = "schema_error"
    SINK_REFUSED = "sink_refused"
    """A sink (PostgreSQL) refused the record for its content; ``detail`` has its message."""


class RawEnvelope(BaseModel):
    """The raw telemetry envelope on ``vex.telemetry.raw`` (format version 1).

    Documentation of what producers send; ingest does NOT validate lines with
    this model (it applies the normative checks in order, so each bad line gets
    its exact reason).  Unknown keys are allowed; the production API's
    misspelling ``recieved_at`` is accepted for ``received_at``.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: int | str | None = None
    eventType: str | None = None  # noqa: N815 - the wire name
    classCode: str | None = None  # noqa: N815
    studentID: str | None = None  # noqa: N815
    project: str | dict[str, Any] | None = None
    raw_message: str | dict[str, Any] | None = Field(
        default=None, description="the payload: a JSON string (or an object)"
    )
    received_at: str | None = Field(default=None, alias="recieved_at")


class RawPayload(BaseModel):
    """The decoded ``raw_message``: the event itself (format version 1)."""

    model_config = ConfigDict(extra="allow")

    eventType: str  # noqa: N815
    studentID: str  # noqa: N815
    sessionID: str  # noqa: N815
    timestamp: str
    playground: str | None = None
    project: str | dict[str, Any] | None = None
    playgroundData: str | dict[str, Any] | None = None  # noqa: N815
    blockEventData: str | dict[str, Any] | None = None  # noqa: N815
    errorMessage: str | None = None  # noqa: N815
    classCode: str | None = None  # noqa: N815


class SourceRef(Record):
    """Where a record came from: topic, partition and offset (and file line)."""

    topic: str
    partition: int
    offset: int
    line: int | None = None


class NormalizedEvent(Record):
    """One accepted telemetry event, keyed by ``student_key`` on ``vex.events``.

    ``workspace_status`` is the JSON-level reading of the payload ``project``:
    ``ok`` (``workspace_xml`` holds the XML, not yet parsed), ``empty_workspace``,
    or an unusable reason (``no_project`` ...).  XML well-formedness is judged
    by the analysis stage.
    """

    schema_version: Literal[1] = 1
    event_id: str
    """The envelope ``id`` as text (integers in decimal)."""
    envelope_id_int: int | None
    """The envelope id when it is an integer (ordering tie-break), else null."""
    student_key: str
    student_id: str
    session_id: str
    event_type: str
    ts: float
    timestamp: str
    received_at: str | None = None
    playground: str | None = None
    class_code: str | None = None
    workspace_status: str
    workspace_xml: str | None = None
    playground_params: dict[str, Any] | None = None
    block_event: dict[str, Any] | None = None
    error_message: str | None = None
    source: SourceRef | None = None


class DeadLetter(Record):
    """A rejected line or an unusable record, with its reason and original bytes."""

    schema_version: Literal[1] = 1
    reason: RejectReason
    detail: str
    stage: Literal["ingest", "analysis", "feedback", "store"]
    original: str
    """The original bytes: UTF-8 text, or base64 when ``original_encoding`` says so."""
    original_encoding: Literal["utf-8", "base64"] = "utf-8"
    original_truncated: bool = False
    """True when ``original`` keeps only the first bytes (the record would not fit on its topic)."""
    original_length: int | None = None
    """The whole original's length in bytes (set when truncated)."""
    original_sha256: str | None = None
    """The SHA-256 (hex) of the whole original (set when truncated)."""
    source: SourceRef | None = None
    event_id: str | None = None
    student_key: str | None = None
    session_id: str | None = None
    dead_lettered_at: float = Field(description="wall-clock epoch seconds")
