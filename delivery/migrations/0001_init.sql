-- The schemas of vexnudge's tables; the tables come in later migrations.
--   chat        conversations with students: questions, answers and nudges
--   event_logs  the research event store
create schema if not exists chat;
create schema if not exists event_logs;
