"""Repositories: one module per stored aggregate, asyncpg underneath.

- :mod:`delivery.repo.events` — the research event store (``event_logs.events``);
- :mod:`delivery.repo.triggers` — trigger fires and their nudge status
  (``event_logs.agent_triggers``);
- :mod:`delivery.repo.requests` — students' questions (``chat.requests``);
- :mod:`delivery.repo.messages` — the conversation (``chat.messages``);
- :mod:`delivery.repo.outbox` — the feedback stage's compound writes (one
  transaction each: a question with its message, a reply with its status);
- :mod:`delivery.repo.pending` — the retry rule and the pending-row queries
  that fires and questions share.

Every write is idempotent: rows are keyed by ids derived from their inputs
and inserted with ``ON CONFLICT``, so a retried or replayed write never makes
a second row.  Functions take a pool or a connection (``Executor``); pass a
connection when the call must join a transaction.
"""
