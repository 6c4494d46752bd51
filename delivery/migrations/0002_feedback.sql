-- Feedback persistence: the event store, triggers with their nudge status,
-- student questions, and the messages streamed to students.
-- Every write is idempotent: each row carries an id derived from its inputs.

-- Normalized events, for research and the admin tick (written in batches).
create table if not exists event_logs.events (
    student_key      text        not null,
    event_id         text        not null,
    session_id       text        not null,
    student_id       text        not null,
    event_type       text        not null,
    event_ts         timestamptz not null,
    playground       text,
    record           jsonb       not null,            -- NormalizedEvent v1
    source_topic     text,
    source_partition integer,
    source_offset    bigint,
    stored_at        timestamptz not null default now(),
    primary key (student_key, event_id)
);
create index if not exists events_session_idx
    on event_logs.events (student_key, session_id, event_ts);

-- Every trigger fire, once (fire-once key), with what became of its nudge.
create table if not exists event_logs.agent_triggers (
    id            bigint generated always as identity primary key,
    trigger_id    uuid        not null unique,        -- derived from the fire-once key
    student_key   text        not null,
    session_id    text        not null,
    trigger_type  text        not null,
    fire_key      text        not null,               -- 'run:<index>' or 'idle:<since>:<alert>'
    run_index     integer,
    alert         integer,
    fired_at      timestamptz not null,
    playground    text,
    detail        text        not null,
    evidence      jsonb       not null,
    status        text        not null
                  check (status in ('pending', 'acted', 'suppressed', 'failed')),
    reason        text,                               -- why suppressed / failed
    response_id   uuid,                               -- the message sent (acted)
    attempts      integer     not null default 0,
    last_error    text,
    request       jsonb,                              -- FeedbackRequest v1, for retries
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    unique (student_key, session_id, trigger_type, fire_key)
);
create index if not exists agent_triggers_pending_idx
    on event_logs.agent_triggers (status, updated_at) where status = 'pending';
create index if not exists agent_triggers_student_idx
    on event_logs.agent_triggers (student_key, fired_at);

-- Student questions (the reactive lane's outbox).
create table if not exists chat.requests (
    request_id    uuid        primary key,
    student_key   text        not null,
    session_id    text,
    question      text        not null,
    status        text        not null
                  check (status in ('pending', 'answered', 'failed')),
    response_id   uuid,
    attempts      integer     not null default 0,
    last_error    text,
    request       jsonb,                              -- FeedbackRequest v1 once built
    asked_at      timestamptz not null default now(),
    updated_at    timestamptz not null default now()
);
create index if not exists requests_pending_idx
    on chat.requests (status, updated_at) where status = 'pending';

-- Messages of the conversation; id is the SSE cursor (Last-Event-ID).
create table if not exists chat.messages (
    id               bigint generated always as identity primary key,
    response_id      uuid        not null unique,     -- derived: a retry never duplicates
    student_key      text        not null,
    session_id       text,
    role             text        not null check (role in ('student', 'assistant')),
    message_text     text        not null,
    origin           text        not null check (origin in ('reactive', 'proactive')),
    feedback_classes text[]      not null default '{}',
    model            text,                            -- 'template' when no model answered
    trigger_id       uuid references event_logs.agent_triggers (trigger_id),
    request_id       uuid,
    created_at       timestamptz not null default now()
);
create index if not exists messages_student_idx on chat.messages (student_key, id);
