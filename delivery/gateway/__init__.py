"""The SSE gateway: its own aiohttp process between ``vex.feedback`` and browsers.

- :mod:`~delivery.gateway.app` builds the application (routes, pages, health, metrics);
- :mod:`~delivery.gateway.consumer` is the one Kafka consumer feeding the hub;
- :mod:`~delivery.gateway.pubsub` is the in-process fan-out to open streams;
- :mod:`~delivery.gateway.student` and :mod:`~delivery.gateway.board` are the streams;
- :mod:`~delivery.gateway.questions` takes students' questions (and re-publishes lost ones);
- :mod:`~delivery.gateway.caps` holds the stream caps and the question rate limit;
- :mod:`~delivery.gateway.tokens` signs and checks student and board tokens (pure);
- ``static/`` holds the student page and the teacher board (plain HTML/JS/CSS).

Run it with ``vexnudge gateway``; see docs/gateway.md.
"""
