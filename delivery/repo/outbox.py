"""The feedback outbox's compound writes, each meant for one transaction.

- :func:`record_question`: a student's question as a ``chat.requests`` row
  plus the student's ``chat.messages`` row (what the gateway stores before
  any request is built);
- :func:`store_question`: the same for a reactive request, with the built
  request attached;
- :func:`store_nudge`: a fire's reply message, and the fire marked ``acted``;
- :func:`store_answer`: a question's reply message, and the question marked
  ``answered``.

Ids are derived, so each write is idempotent: the nudge of a fire is stored
under :func:`nudge_response_id`, the answer to a question under
:func:`answer_response_id`, the question itself under its request id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from delivery.db import Executor
from delivery.repo import messages, requests, triggers
from delivery.repo.codec import as_uuid
from streams.ids import derived_id
from topology.schemas.feedback import FeedbackMessage, FeedbackRequest, Lane

#: The text stored for a question sent without words (the help button).
HELP_TEXT = "Help"


@dataclass(frozen=True, slots=True)
class Reply:
    """What to store as the assistant's message."""

    text: str
    classes: Sequence[str]
    model: str | None
    note: str | None = None
    """Why the template answered instead of the model (kept in ``last_error``)."""


def nudge_response_id(trigger_id: str) -> str:
    """The response id of the nudge sent for a fire."""
    return derived_id("nudge", trigger_id)


def answer_response_id(request_id: str) -> str:
    """The response id of the answer to a student's question."""
    return derived_id("answer", request_id)


def question_id(request: FeedbackRequest) -> str:
    """The id under which a reactive request's question is stored (a UUID)."""
    return str(as_uuid(request.chat_request_id or request.request_id))


async def stored_message(db: Executor, response_id: str) -> FeedbackMessage:
    """The record to publish for a stored message.

    :raises LookupError: when no message has that response id.
    """
    row = await messages.get_message(db, response_id)
    if row is None:
        raise LookupError(f"message {response_id} is not stored")
    return row.to_feedback_message()


async def record_question(
    conn: asyncpg.Connection, qid: str, student_key: str, session_id: str | None, text: str
) -> tuple[bool, messages.StoredMessage]:
    """Store a question (``pending``) and the student's message under the question id.

    :returns: ``(True if the question row is new, the student's stored message)``.
    """
    new = await requests.record_question(conn, qid, student_key, session_id, text)
    stored = await messages.insert_message(
        conn,
        response_id=qid,
        student_key=student_key,
        session_id=session_id,
        role="student",
        text=text,
        origin=Lane.REACTIVE,
        request_id=qid,
    )
    return new, stored


async def store_question(conn: asyncpg.Connection, request: FeedbackRequest) -> tuple[str, bool]:
    """Store a reactive request's question (both rows) and attach the request.

    :returns: ``(question id, True if the question row is new)``.
    """
    qid = question_id(request)
    text = request.question if request.question and request.question.strip() else HELP_TEXT
    new, _ = await record_question(conn, qid, request.student_key, request.session_id, text)
    await requests.attach_request(conn, qid, request)
    return qid, new


async def store_nudge(conn: asyncpg.Connection, request: FeedbackRequest, reply: Reply) -> tuple[FeedbackMessage, bool]:
    """Store the nudge of a proactive request and mark its fire ``acted``.

    :returns: ``(the stored message, True if it was inserted now)``.
    """
    assert request.trigger is not None, "a proactive request carries its trigger"
    tid = request.trigger.trigger_id
    response_id = nudge_response_id(tid)
    stored = await messages.insert_message(
        conn,
        response_id=response_id,
        student_key=request.student_key,
        session_id=request.session_id,
        role="assistant",
        text=reply.text,
        origin=Lane.PROACTIVE,
        classes=reply.classes,
        model=reply.model,
        trigger_id=tid,
    )
    await triggers.mark_acted(conn, tid, response_id, note=reply.note)
    return await stored_message(conn, response_id), stored.inserted


async def store_answer(
    conn: asyncpg.Connection, request: FeedbackRequest, qid: str, reply: Reply
) -> tuple[FeedbackMessage, bool]:
    """Store the answer to question ``qid`` and mark the question ``answered``.

    :returns: ``(the stored message, True if it was inserted now)``.
    """
    response_id = answer_response_id(qid)
    stored = await messages.insert_message(
        conn,
        response_id=response_id,
        student_key=request.student_key,
        session_id=request.session_id,
        role="assistant",
        text=reply.text,
        origin=Lane.REACTIVE,
        classes=reply.classes,
        model=reply.model,
        request_id=qid,
    )
    await requests.mark_answered(conn, qid, response_id, note=reply.note)
    return await stored_message(conn, response_id), stored.inserted
