"""Protocol-level fakes of the external servers the product talks to (tests only).

- :mod:`tests.fakes.ollama_server` — the fake Ollama HTTP API (in-process or a process);
- :mod:`tests.fakes.fixtures` — pytest fixtures ``fake_ollama`` and ``fake_ollama_process``.
"""
