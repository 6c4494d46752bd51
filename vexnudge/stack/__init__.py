"""The local stack: a real Apache Kafka broker and a real PostgreSQL server.

Started, inspected and stopped by ``vexnudge stack up|status|down`` (see
:mod:`vexnudge.stack.lifecycle`), by ``scripts/test.sh`` and by the root test
fixture ``stack``.  Nothing here needs Docker.  See docs/stack.md.
"""
