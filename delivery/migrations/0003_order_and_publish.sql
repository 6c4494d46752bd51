-- The stored order of events, and the publish mark of messages.

-- Insertion order: the last tie-break of a session's events after event time
-- and the integer envelope id (a batch is inserted in stream order).
alter table event_logs.events
    add column if not exists seq bigint generated always as identity;

-- When an assistant message was handed to vex.feedback.  A message stored but
-- not yet published (the process died in between) is published by the sweeper.
alter table chat.messages
    add column if not exists published_at timestamptz;
update chat.messages set published_at = created_at where published_at is null;
create index if not exists messages_unpublished_idx
    on chat.messages (id) where published_at is null and role = 'assistant';
