"""The SSE gateway: its own aiohttp process between ``vex.feedback`` and browsers.

- :mod:`~delivery.gateway.app` builds the application (routes, pages, health, metrics);
- :mod:`~delivery.gateway.consumer` is the one Kafka consumer feeding the hub;
- :mod:`~delivery.gateway.pubsub` is the in-process fan-out to open streams;
- :mod:`~delivery.gateway.student` and :mod:`~delivery.gateway.board` are the streams;
- :mod:`~delivery.gateway.tokens` signs and checks student tokens (pure);
- ``static/`` holds the student page and the teacher board (plain HTML/JS/CSS).

Run it with ``vexnudge gateway``; see docs/gateway.md.
"""
