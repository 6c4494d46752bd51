"""A protocol-level fake of the Ollama HTTP API, for tests and benchmarks.

Answers ``POST /api/chat`` (a single JSON body, or NDJSON chunks when the
request says ``"stream": true``), ``GET /api/tags`` and ``GET /api/version``
with the JSON shapes the ``ollama`` Python client parses.  Every request is
recorded (path, body, prompt) for assertions.

Behaviours (:class:`Mode`), switchable at run time from Python
(:meth:`FakeOllama.configure`) or over HTTP (``POST /_control`` with a JSON
object of the same keyword names; ``GET /_control`` shows the state,
``GET /_requests`` the recorded requests, ``POST /_reset`` forgets them):

==============  ==============================================================
``ok``          a short realistic reply (``reply``; ``{block}`` is filled with
                the first friendly block name the prompt lists, when ``echo``)
``slow``        the ``ok`` reply after ``delay_s`` seconds (1 s when unset)
``fail``        HTTP ``status`` (500) with Ollama's ``{"error": ...}`` body
``missing``     HTTP 404 "model not found, try pulling it first"
``empty``       an empty message content
``think``       ``<think>…</think>`` then the reply
``think_only``  reasoning only, no answer
``malformed``   HTTP 200 with a body that is not JSON
``down``        the connection is closed without an answer
``flaky``       HTTP 500 for the first ``fail_first`` calls, then ``ok``
==============  ==============================================================

``script`` (a list of modes) overrides the mode for the next calls, one per
call.  ``refuse_containing`` (a non-empty string) makes every chat whose prompt
contains it answer HTTP ``refuse_status`` (400) with Ollama's error body,
whatever the mode: a request refused for its own content.  Run in-process with :func:`serve` (an async context manager), or as
a process: ``python -m tests.fakes.ollama_server --port 0 --mode ok`` prints
``fake-ollama listening on http://127.0.0.1:PORT`` and serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import orjson
from aiohttp import web


class Mode(StrEnum):
    OK = "ok"
    SLOW = "slow"
    FAIL = "fail"
    MISSING = "missing"
    EMPTY = "empty"
    THINK = "think"
    THINK_ONLY = "think_only"
    MALFORMED = "malformed"
    DOWN = "down"
    FLAKY = "flaky"


DEFAULT_REPLY = (
    "Look at the number in your `{block}` block and change it a little, "
    "then run the program again to see where the robot stops."
)
NO_BLOCK_REPLY = (
    "Pick one block in your program, change one number in it, then run the program again and watch what the robot does."
)
THINKING = "<think>The student seems stuck. I should point at one block and one number.</think>"
MODEL_VERSION = "0.12.3"
DIGEST = "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72"
#: The delay of ``slow`` when ``delay_s`` is not set.
SLOW_DEFAULT_S = 1.0
_BLOCK_LINE = re.compile(r"^Block names to use: (.*)$", re.M)
_BACKTICKED = re.compile(r"`([^`]+)`")


@dataclass
class Behaviour:
    """The switchable behaviour (the keywords of ``configure`` and ``/_control``)."""

    mode: Mode = Mode.OK
    reply: str = DEFAULT_REPLY
    echo: bool = True
    delay_s: float = 0.0
    status: int = 500
    fail_first: int = 0
    model: str = "llama3.2"
    script: list[Mode] = field(default_factory=list)
    refuse_containing: str = ""
    refuse_status: int = 400


@dataclass(frozen=True)
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    body: Any
    prompt: str | None
    at: float


def block_in_prompt(prompt: str) -> str | None:
    """The first friendly block name (not a hat block) of the prompt's "Block names to use" line."""
    line = _BLOCK_LINE.search(prompt)
    names: list[str] = _BACKTICKED.findall(line.group(1)) if line else []
    actions = [n for n in names if not n.lower().startswith("when ")]
    picked = actions or names
    return picked[0] if picked else None


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeOllama:
    """The fake server: an aiohttp app plus its recorded traffic and behaviour."""

    def __init__(self, **behaviour: Any) -> None:
        self.behaviour = Behaviour()
        self.requests: list[Recorded] = []
        self.chat_calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.url = ""
        self._runner: web.AppRunner | None = None
        self.configure(**behaviour)
        self.app = web.Application()
        self.app.add_routes(
            [
                web.post("/api/chat", self._chat),
                web.get("/api/tags", self._tags),
                web.get("/api/version", self._version),
                web.post("/_control", self._control_post),
                web.get("/_control", self._control_get),
                web.get("/_requests", self._requests),
                web.post("/_reset", self._reset),
            ]
        )

    # --- control -------------------------------------------------------------
    def configure(self, **changes: Any) -> Behaviour:
        """Change the behaviour (``mode=``, ``reply=``, ``delay_s=`` ...); resets ``flaky``."""
        known = {f.name for f in fields(Behaviour)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown behaviour keys {sorted(unknown)}; known: {sorted(known)}")
        for key, value in changes.items():
            if key == "mode":
                value = Mode(value)
            elif key == "script":
                value = [Mode(m) for m in value]
            setattr(self.behaviour, key, value)
        self.chat_calls = 0
        return self.behaviour

    def reset(self) -> None:
        """Forget the recorded requests and counters; back to ``ok``."""
        self.behaviour = Behaviour()
        self.requests.clear()
        self.chat_calls = self.max_in_flight = 0

    @property
    def prompts(self) -> list[str]:
        """The prompt (the last user message) of every chat request, in order."""
        return [r.prompt for r in self.requests if r.path == "/api/chat" and r.prompt is not None]

    def state(self) -> dict[str, Any]:
        """Behaviour and counters as JSON-able values."""
        return {
            **asdict(self.behaviour),
            "chat_calls": self.chat_calls,
            "requests": len(self.requests),
            "max_in_flight": self.max_in_flight,
        }

    # --- lifecycle -----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0: a free port); returns the base URL."""
        self._runner = web.AppRunner(self.app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound = self._runner.addresses[0][1]
        self.url = f"http://{host}:{bound}"
        return self.url

    async def stop(self) -> None:
        """Stop serving (later calls get "connection refused")."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- handlers ------------------------------------------------------------
    def _next_mode(self) -> Mode:
        b = self.behaviour
        self.chat_calls += 1
        if b.script:
            return b.script.pop(0)
        if b.mode is Mode.FLAKY:
            return Mode.FAIL if self.chat_calls <= b.fail_first else Mode.OK
        return b.mode

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        messages = body.get("messages") if isinstance(body, dict) else None
        prompt = messages[-1].get("content") if messages else None
        self.requests.append(Recorded("POST", "/api/chat", body, prompt, time.time()))
        refuse = self.behaviour.refuse_containing
        if refuse and isinstance(prompt, str) and refuse in prompt:
            self.chat_calls += 1
            return web.json_response({"error": "the prompt was refused"}, status=self.behaviour.refuse_status)
        mode = self._next_mode()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, mode, body if isinstance(body, dict) else {}, prompt)
        finally:
            self.in_flight -= 1

    async def _answer(
        self, request: web.Request, mode: Mode, body: dict[str, Any], prompt: str | None
    ) -> web.StreamResponse:
        b = self.behaviour
        delay = b.delay_s or (SLOW_DEFAULT_S if mode is Mode.SLOW else 0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        if mode is Mode.DOWN:
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError  # aiohttp drops the closed connection quietly
        if mode is Mode.FAIL:
            return web.json_response({"error": "llama runner process has terminated"}, status=b.status)
        if mode is Mode.MISSING:
            name = body.get("model") or b.model
            return web.json_response({"error": f'model "{name}" not found, try pulling it first'}, status=404)
        if mode is Mode.MALFORMED:
            return web.Response(
                body=b'{"model": "llama3.2", "message": {"role": "assis',
                content_type="application/json",
            )
        content = self._content(mode, prompt or "")
        if body.get("stream"):
            return await self._stream(request, body, prompt or "", content)
        return web.json_response(self._final(body, prompt or "", content, whole=True))

    def _content(self, mode: Mode, prompt: str) -> str:
        if mode is Mode.EMPTY:
            return ""
        if mode is Mode.THINK_ONLY:
            return THINKING
        block = block_in_prompt(prompt) if self.behaviour.echo else None
        reply = self.behaviour.reply
        if "{block}" in reply:
            reply = reply.replace("{block}", block) if block else NO_BLOCK_REPLY
        return THINKING + "\n" + reply if mode is Mode.THINK else reply

    def _final(self, body: dict[str, Any], prompt: str, content: str, *, whole: bool) -> dict[str, Any]:
        return {
            "model": body.get("model") or self.behaviour.model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": content if whole else ""},
            "done_reason": "stop",
            "done": True,
            "total_duration": 612_000_000,
            "load_duration": 2_100_000,
            "prompt_eval_count": max(1, len(prompt) // 4),
            "prompt_eval_duration": 180_000_000,
            "eval_count": max(1, len(content) // 4) if content else 0,
            "eval_duration": 420_000_000,
        }

    async def _stream(
        self, request: web.Request, body: dict[str, Any], prompt: str, content: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        model = body.get("model") or self.behaviour.model
        for piece in re.findall(r"\S+\s*", content):
            chunk = {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
            await response.write(orjson.dumps(chunk) + b"\n")
        await response.write(orjson.dumps(self._final(body, prompt, content, whole=False)) + b"\n")
        await response.write_eof()
        return response

    async def _tags(self, request: web.Request) -> web.Response:
        self.requests.append(Recorded("GET", "/api/tags", None, None, time.time()))
        name = f"{self.behaviour.model}:latest"
        return web.json_response(
            {
                "models": [
                    {
                        "name": name,
                        "model": name,
                        "modified_at": "2025-01-15T10:20:30.123456Z",
                        "size": 2019393189,
                        "digest": DIGEST,
                        "details": {
                            "parent_model": "",
                            "format": "gguf",
                            "family": "llama",
                            "families": ["llama"],
                            "parameter_size": "3.2B",
                            "quantization_level": "Q4_K_M",
                        },
                    }
                ]
            }
        )

    async def _version(self, request: web.Request) -> web.Response:
        self.requests.append(Recorded("GET", "/api/version", None, None, time.time()))
        return web.json_response({"version": MODEL_VERSION})

    async def _control_post(self, request: web.Request) -> web.Response:
        try:
            changes = await request.json()
            self.configure(**changes)
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(self.state())

    async def _control_get(self, request: web.Request) -> web.Response:
        return web.json_response(self.state())

    async def _requests(self, request: web.Request) -> web.Response:
        return web.json_response([asdict(r) for r in self.requests])

    async def _reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response(self.state())


@asynccontextmanager
async def serve(host: str = "127.0.0.1", port: int = 0, **behaviour: Any) -> AsyncIterator[FakeOllama]:
    """``async with serve(mode="ok") as fake:`` — a started fake; ``fake.url`` is its base URL."""
    fake = FakeOllama(**behaviour)
    await fake.start(host, port)
    try:
        yield fake
    finally:
        await fake.stop()


async def _main(args: argparse.Namespace) -> None:
    behaviour: dict[str, Any] = {
        "mode": args.mode,
        "delay_s": args.delay,
        "fail_first": args.fail_first,
    }
    if args.reply is not None:
        behaviour["reply"] = args.reply
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with serve(args.host, args.port, **behaviour) as fake:
        print(f"fake-ollama listening on {fake.url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Command line: serve the fake until SIGTERM / Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.ollama_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: pick a free port (printed)")
    parser.add_argument("--mode", default="ok", choices=[m.value for m in Mode])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--fail-first", type=int, default=0, help="flaky: calls that fail first")
    parser.add_argument("--reply", help="reply text ({block} = a block named in the prompt)")
    with suppress(KeyboardInterrupt):
        asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
