"""The pages in a real headless Chromium, against a real gateway process.

- ``test_pages_show_live_nudges_questions_resume_and_the_board``: the gateway
  alone, fed with rows and records this test stores and publishes itself
  (exactly what the feedback service stores and publishes).
- ``test_wheel_spin_reaches_the_student_page_and_the_board``: the whole
  product — a worker with the proactive lane on, the fake Ollama server and
  the gateway; raw telemetry of a student re-running one program unchanged
  goes in, the nudge must appear on the student's page and the trigger on
  the teacher board.

Screenshots of each stage go to ``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from delivery.db import create_pool
from delivery.gateway import tokens
from delivery.repo import messages as repo_messages
from delivery.repo import triggers as repo_triggers
from tests.e2e.conftest import screenshot
from topology import topics as T
from topology.kafka_admin import ensure_topics, read_to_end
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.base import decode, encode
from topology.schemas.feedback import ChatRequest, FeedbackRequest, Lane, NudgeOutcome
from topology.settings import Settings
from vexnudge.gatewayproc import GatewayProcess

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.integration]

SECRET = "e2e-token-secret-0123456789abcdef"
ADMIN = "e2e-admin-token-0123456789abcdef-0123"
INTERNAL_LABELS = (
    "wheel_spin",
    "resilience",
    "explorer",
    "iterative",
    "identical reruns",
    "REASSURE",
    "ELABORATE",
    "ERROR_FLAGGING",
    "template",
)


def isolated(stack: Settings, prefix: str) -> Settings:
    return stack.model_copy(update={"topic_prefix": prefix, "app_id": prefix.rstrip(".")})


@contextmanager
def gateway(settings: Settings, **env: str) -> Iterator[GatewayProcess]:
    process = GatewayProcess(
        settings, SECRET, ADMIN, env={"SSE_RETRY_MS": "500", "SSE_HEARTBEAT_S": "5", **env}
    ).start()
    try:
        yield process.wait_healthy()
    finally:
        process.stop()


def wait_for(
    predicate: Callable[[], Any],
    timeout_s: float,
    what: str | Callable[[], str],
    driver: Any = None,
    shot: str | None = None,
) -> Any:
    """Poll ``predicate`` until it returns something truthy (screenshot on failure)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            if driver is not None and shot:
                screenshot(driver, f"FAILED-{shot}")
            described = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {described}")
        time.sleep(0.2)


_BUBBLES_JS = """
return [...document.querySelectorAll('#messages ' + arguments[0])].map((li) => ({
  id: li.dataset.messageId || "", class: li.className, text: li.innerText}));
"""

_ROWS_JS = """
return [...document.querySelectorAll('#rows tr')].map((tr) => {
  const cells = [...tr.querySelectorAll('td')].map((td) => td.innerText);
  return {trigger_id: tr.dataset.triggerId, status: tr.dataset.status, time: cells[0],
          student: cells[1], type: cells[2], evidence: cells[3], outcome: cells[4]};
});
"""


def bubbles(driver: Any, selector: str = "li.msg") -> list[dict[str, str]]:
    """The chat bubbles, read in one script call (the page may redraw at any time)."""
    return list(driver.execute_script(_BUBBLES_JS, selector))


def board_rows(driver: Any) -> list[dict[str, str]]:
    """The board's rows, read in one script call (the table is redrawn on every event)."""
    return list(driver.execute_script(_ROWS_JS))


def page_status(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, "status").get_attribute("data-state"))


# --- the pages against the gateway alone ------------------------------------------------


async def _store_nudge(settings: Settings, who: str, text: str, *, publish: bool = True) -> tuple[str, int]:
    """A fired trigger, its stored proactive message, the records the worker would publish."""
    from aiokafka import AIOKafkaProducer

    trigger = TriggerFired(
        trigger_id=str(uuid.uuid4()),
        type=TriggerType.WHEEL_SPIN,
        student_key=who,
        student_id=who,
        session_id="s-e2e",
        run_index=uuid.uuid4().int % 100_000,
        alert=None,
        ts=time.time(),
        timestamp="2026-01-01T00:00:00Z",
        playground="GOMars",
        event_id="7",
        detail="6 identical reruns",
        evidence=TriggerEvidence(
            recent_distances=[None, 0, 0, 0, 0, 0, 0], edit_distance=0, zero_streak=6, threshold=6
        ),
    )
    request = FeedbackRequest(
        request_id=str(uuid.uuid4()),
        lane=Lane.PROACTIVE,
        student_key=who,
        student_id=who,
        session_id="s-e2e",
        playground="GOMars",
        ts=trigger.ts,
        trigger=trigger,
    )
    pool = await create_pool(settings, min_size=1, max_size=2)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        assert await repo_triggers.record_trigger(pool, request, status="pending")
        stored = await repo_messages.insert_message(
            pool,
            response_id=str(uuid.uuid4()),
            student_key=who,
            session_id="s-e2e",
            role="assistant",
            text=text,
            origin="proactive",
            classes=["REASSURE"],
            model="template",
            trigger_id=trigger.trigger_id,
        )
        await repo_triggers.mark_acted(pool, trigger.trigger_id, stored.response_id)
        if publish:
            row = await repo_messages.get_message(pool, stored.response_id)
            assert row is not None
            key, topic = who.encode(), settings.topic
            await producer.send_and_wait(topic(T.TRIGGERS.name), encode(trigger), key=key)
            await producer.send_and_wait(topic(T.FEEDBACK.name), encode(row.to_feedback_message()), key=key)
            await repo_messages.mark_published(pool, [stored.id])
            outcome = NudgeOutcome(
                trigger_id=trigger.trigger_id,
                trigger_type="wheel_spin",
                student_key=who,
                session_id="s-e2e",
                status="acted",
                message_id=stored.id,
                response_id=stored.response_id,
                at=time.time(),
            )
            await producer.send_and_wait(topic(T.NUDGE_OUTCOMES.name), encode(outcome), key=key)
        return trigger.trigger_id, stored.id
    finally:
        await producer.stop()
        await pool.close()


def test_pages_show_live_nudges_questions_resume_and_the_board(
    stack: Settings, unique_prefix: str, chrome: Any
) -> None:
    from selenium.webdriver.common.by import By

    settings = isolated(stack, unique_prefix)
    who = f"e2e-{uuid.uuid4().hex[:8]}"
    token = tokens.issue(SECRET.encode(), who, ttl_s=3600, now=time.time())
    with gateway(settings) as gw:
        chrome.get(f"{gw.base_url}/student?token={token}")
        wait_for(lambda: page_status(chrome) == "live", 20, "the student stream", chrome, "student-connect")
        assert "token=" not in chrome.current_url  # the secret leaves the address bar

        text = "Your program ran the same way a few times. What could you change to get closer?"
        _, first_id = asyncio.run(_store_nudge(settings, who, text))
        [nudge] = wait_for(lambda: bubbles(chrome, "li.proactive"), 20, "the nudge", chrome, "student-nudge")
        assert nudge["id"] == str(first_id) and text in nudge["text"] and "CHECK-IN" in nudge["text"].upper()
        source = chrome.page_source
        assert not [label for label in INTERNAL_LABELS if label in source]
        screenshot(chrome, "student-nudge")

        box = chrome.find_element(By.ID, "question")
        box.send_keys("Why does my robot stop early?")
        chrome.find_element(By.ID, "send").click()
        mine = wait_for(
            lambda: [b for b in bubbles(chrome, "li.from-student") if b["id"]],
            20,
            "the question echo",
            chrome,
            "student-question",
        )
        assert "Why does my robot stop early?" in mine[0]["text"]
        requests = asyncio.run(_chat_requests(settings))
        assert [(r.student_key, r.text) for r in requests] == [(who, "Why does my robot stop early?")]

        gw.stop()  # the gateway goes away; a nudge is stored and published meanwhile
        wait_for(lambda: page_status(chrome) != "live", 20, "the page to notice", chrome, "student-offline")
        missed = "While you were away: try one change, then run again."
        _, missed_id = asyncio.run(_store_nudge(settings, who, missed))
        gw.start().wait_healthy()
        got = wait_for(
            lambda: [b for b in bubbles(chrome, "li.proactive") if b["id"] == str(missed_id)],
            30,
            "the missed nudge after the reconnect",
            chrome,
            "student-resume",
        )
        assert missed in got[0]["text"]
        ids = [b["id"] for b in bubbles(chrome) if b["id"]]
        assert len(ids) == len(set(ids)) == 3 and ids == sorted(ids, key=int)
        screenshot(chrome, "student-resumed")

        chrome.get(f"{gw.base_url}/board#admin_token={ADMIN}")
        rows = wait_for(
            lambda: [r for r in board_rows(chrome) if r["student"] == who], 20, "the board rows", chrome, "board"
        )
        assert {r["type"] for r in rows} == {"wheel_spin"}
        assert any("distances" in r["evidence"] and "threshold 6" in r["evidence"] for r in rows)
        assert any(missed in r["outcome"] for r in rows) and any(text in r["outcome"] for r in rows)
        screenshot(chrome, "board")


async def _chat_requests(settings: Settings) -> list[ChatRequest]:
    topic = settings.topic(T.CHAT_REQUESTS.name)
    return [decode(ChatRequest, r.value or b"") async for r in read_to_end(settings, [topic])]


def test_board_login_field_and_refusal(stack: Settings, unique_prefix: str, chrome: Any) -> None:
    from selenium.webdriver.common.by import By

    settings = isolated(stack, unique_prefix)
    asyncio.run(ensure_topics(settings, [settings.topic(T.FEEDBACK.name)]))
    with gateway(settings) as gw:
        chrome.get(f"{gw.base_url}/board")
        field = chrome.find_element(By.ID, "admin-token")
        field.send_keys("wrong-token")
        chrome.find_element(By.CSS_SELECTOR, "#login button").click()
        wait_for(lambda: page_status(chrome) == "closed", 20, "the refusal", chrome, "board-refused")
        chrome.execute_script("sessionStorage.clear()")
        chrome.get(f"{gw.base_url}/board")
        chrome.find_element(By.ID, "admin-token").send_keys(ADMIN)
        chrome.find_element(By.CSS_SELECTOR, "#login button").click()
        wait_for(lambda: page_status(chrome) == "live", 20, "the board stream", chrome, "board-login")
        expired = tokens.issue(SECRET.encode(), "someone", ttl_s=1, now=time.time() - 10)
        chrome.get(f"{gw.base_url}/student?token={expired}")
        wait_for(
            lambda: "expired" in chrome.find_element(By.ID, "notice").text,
            10,
            "the expiry notice",
            chrome,
            "student-expired",
        )


# --- the whole product -------------------------------------------------------------------

FAKE_REPLY = "You ran the same program a few times. Try changing one number, then run it again."


def test_wheel_spin_reaches_the_student_page_and_the_board(
    stack: Settings, unique_prefix: str, chrome: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.telemetry import wheel_spin_lines
    from tests.fakes.process import fake_ollama_subprocess
    from tests.integration.pipeline import start_worker
    from vexnudge.producer import produce_lines

    settings = isolated(stack, unique_prefix)
    student_id = f"E2E-{uuid.uuid4().hex[:8]}"  # raw spelling; the key is lower-cased
    who = student_id.lower()
    token = tokens.issue(SECRET.encode(), student_id, ttl_s=3600, now=time.time())
    with fake_ollama_subprocess(reply=FAKE_REPLY) as ollama_url:
        for name, value in {
            "TRIGGER_DAEMON_ENABLED": "true",
            "OLLAMA_HOST": ollama_url,
            "TRIGGER_POLL_INTERVAL_S": "1",
            "NUDGE_COOLDOWN_S": "0",
        }.items():
            monkeypatch.setenv(name, value)
        asyncio.run(ensure_topics(settings))
        worker = start_worker(settings, "live")
        try:
            with gateway(settings) as gw:
                chrome.get(f"{gw.base_url}/student?token={token}")
                wait_for(lambda: page_status(chrome) == "live", 20, "the student stream", chrome, "e2e-student-connect")
                student_tab = chrome.current_window_handle
                chrome.switch_to.new_window("tab")
                chrome.get(f"{gw.base_url}/board#admin_token={ADMIN}")
                wait_for(lambda: page_status(chrome) == "live", 20, "the board stream", chrome, "e2e-board")

                lines = wheel_spin_lines(student_id, f"sess-{uuid.uuid4().hex[:6]}", now=time.time())
                asyncio.run(produce_lines(settings, lines))

                # The trigger reaches the board first, from vex.triggers, with its evidence.
                fired = wait_for(
                    lambda: [r for r in board_rows(chrome) if r["student"] == who and r["type"] == "wheel_spin"],
                    60,
                    lambda: f"the trigger on the board (worker log:\n{worker.log_tail()})",
                    chrome,
                    "e2e-board-fired",
                )
                assert "identical reruns 6" in fired[0]["evidence"] and "threshold 6" in fired[0]["evidence"]
                # Then its outcome: the nudge sent (never suppressed for a first fire).
                done = wait_for(
                    lambda: [
                        r for r in board_rows(chrome) if r["student"] == who and r["status"] not in ("pending", None)
                    ],
                    90,
                    lambda: f"the trigger's outcome; board {board_rows(chrome)[:2]} (worker log:\n{worker.log_tail()})",
                    chrome,
                    "e2e-board-outcome",
                )
                assert done[0]["status"] == "acted", done[0]
                assert "number" in done[0]["outcome"]  # the fake model's reply, sanitized
                screenshot(chrome, "e2e-board-trigger")

                chrome.switch_to.window(student_tab)
                nudges = wait_for(
                    lambda: bubbles(chrome, "li.proactive"),
                    30,
                    "the nudge on the student page",
                    chrome,
                    "e2e-student-nudge",
                )
                assert len(nudges) == 1 and "CHECK-IN" in nudges[0]["text"].upper()
                assert "number" in nudges[0]["text"]
                assert not [label for label in INTERNAL_LABELS if label in chrome.page_source]
                screenshot(chrome, "e2e-student-nudge")
        finally:
            worker.stop()
