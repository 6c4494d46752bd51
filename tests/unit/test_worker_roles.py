"""WORKER_ROLES: which agents a worker runs, and the consumer group it joins."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from streams.agents.pipeline import build_pipeline
from topology.settings import Settings

pytestmark = pytest.mark.usefixtures("close_stray_loops")


def _settings(tmp_path, roles: str) -> Settings:
    return Settings(app_id="vx-test", worker_roles=roles, worker_datadir=tmp_path, worker_web_port=0)


def test_roles_parse_from_a_comma_list_and_choose_the_group(tmp_path) -> None:
    every = Settings(worker_datadir=tmp_path, app_id="vx-test")
    assert every.worker_roles == {"stream", "feedback", "store"}
    assert every.group_id == "vx-test"
    assert _settings(tmp_path, "stream").group_id == "vx-test"
    side = _settings(tmp_path, " feedback , store ")
    assert side.worker_roles == {"feedback", "store"}
    assert side.group_id == "vx-test-feedback"  # never shares the stream's partitions


@pytest.mark.parametrize("roles", ["bogus", "stream,analysis", ""])
def test_unknown_or_empty_roles_are_refused(tmp_path, roles: str) -> None:
    with pytest.raises(ValidationError, match="worker roles"):
        _settings(tmp_path, roles)


def test_env_variable_sets_the_roles(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORKER_ROLES", "feedback")
    assert Settings(worker_datadir=tmp_path).worker_roles == {"feedback"}


def _agents(settings: Settings) -> tuple[set[str], set[str]]:
    p = build_pipeline(settings)
    agents = {name.rsplit(".", 1)[-1] for name in p.app.agents}
    return agents, set(p.tables)


def test_stream_role_has_the_tables_and_stream_agents_only(tmp_path) -> None:
    agents, tables = _agents(_settings(tmp_path, "stream"))
    assert tables  # the state lives with the stream role
    assert agents == {"stream"}  # ingest and analysis in one agent


def test_feedback_role_has_no_tables_and_no_stream_agents(tmp_path) -> None:
    agents, tables = _agents(_settings(tmp_path, "feedback"))
    assert tables == set()
    assert agents == {"feedback"}


@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
def test_worker_event_loop_setting_chooses_the_loop(kind: str) -> None:
    import asyncio

    import uvloop

    from vexnudge.cli.worker import use_event_loop

    try:
        use_event_loop(kind)
        loop = asyncio.get_event_loop_policy().new_event_loop()
        assert isinstance(loop, uvloop.Loop) is (kind == "uvloop")
        loop.close()
    finally:
        asyncio.get_event_loop().close()
        asyncio.set_event_loop_policy(None)
        asyncio.set_event_loop(asyncio.new_event_loop())


@pytest.mark.parametrize(("roles", "loaded"), [("feedback", True), ("store", True), ("stream", False)])
def test_feedback_modules_load_as_the_worker_is_built_not_at_the_first_trigger(tmp_path, roles, loaded) -> None:
    """Imported lazily, the feedback service (about 0.3 s of imports) would load
    inside the event loop at the first trigger and stall the stream agent."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from streams.agents.pipeline import build_pipeline\n"
        "from topology.settings import Settings\n"
        f"build_pipeline(Settings(app_id='vx-test', worker_roles={roles!r}, worker_datadir={str(tmp_path)!r},"
        " worker_web_port=0))\n"
        "print(sorted(m for m in ('feedback.service', 'feedback.llm', 'delivery.db') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    expected = ["delivery.db", "feedback.llm", "feedback.service"] if loaded else []
    assert out.strip() == repr(expected)


def test_a_database_down_at_start_leaves_the_feedback_worker_running(tmp_path, caplog) -> None:
    """The start-up warm-up logs the outage and leaves the resources to be built
    at first use (the agents retry); it never raises into the worker."""
    import asyncio

    settings = Settings(
        app_id="vx-test",
        worker_roles="feedback",
        worker_datadir=tmp_path,
        worker_web_port=0,
        database_url="postgresql://nobody:secret@127.0.0.1:1/nothing",
    )
    p = build_pipeline(settings)
    warm = [t for t in p.app._app_tasks if t.__name__ == "_warm_up"]
    assert len(warm) == 1
    asyncio.run(warm[0]())
    assert "feedback resources not ready at start" in caplog.text
    res = p.extras["resources"]
    assert res.pool is None and res.service is None
