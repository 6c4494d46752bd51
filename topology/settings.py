"""The one settings object: the only place that reads the environment.

Built once at an entry point (a CLI command, the worker, the gateway) with
:func:`load_settings` and passed down.  Values come from the environment and,
for what the environment does not set, from a ``.env`` file at the repository
root (``KEY=value`` lines; the environment always wins).  Every field documents the environment
variable that sets it (the upper-cased field name, no prefix) and its default.
Secrets are :class:`pydantic.SecretStr` and never printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: The one pinned Apache Kafka broker version (Maven jars and docker-compose image).
KAFKA_VERSION = "4.2.2"
#: The log4j2 backend that matches :data:`KAFKA_VERSION` (its POM leaves it out).
LOG4J2_VERSION = "2.25.3"

TRIGGER_TYPES = ("wheel_spin", "resilience", "explorer", "iterative", "inactive")


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return frozenset(v.strip() for v in value.split(",") if v.strip())
    return value


def _split_mapping(value: object) -> object:
    """``"RoverRescue=3,CoralReefRescue=5"`` → ``{"RoverRescue": 3, ...}``."""
    if isinstance(value, str):
        out: dict[str, int] = {}
        for part in value.split(","):
            if part.strip():
                key, _, num = part.partition("=")
                out[key.strip()] = int(num)
        return out
    return value


class Settings(BaseSettings):
    """Every tunable of vexnudge.  Field ``foo_bar`` is read from ``FOO_BAR``."""

    model_config = SettingsConfigDict(
        case_sensitive=False,
        frozen=True,
        extra="ignore",
        populate_by_name=True,
        use_attribute_docstrings=True,
        env_file=PROJECT_ROOT / ".env",
        env_file_encoding="utf-8",
    )

    # --- Kafka and the Faust app -------------------------------------------------
    kafka_bootstrap_servers: str = "127.0.0.1:9092"
    """KAFKA_BOOTSTRAP_SERVERS: comma-separated host:port list."""
    topic_prefix: str = ""
    """TOPIC_PREFIX: prepended to every topic name (tests isolate runs with it)."""
    topic_partitions: int = Field(8, ge=1, le=256)
    """TOPIC_PARTITIONS: the ONE partition count of every keyed topic and table."""
    topic_replication_factor: int = Field(1, ge=1)
    """TOPIC_REPLICATION_FACTOR: 1 on the local stack, 3 on a real cluster."""
    app_id: str = "vexnudge"
    """APP_ID: the Faust app id, which is also the consumer group."""
    worker_store: Literal["memory://", "rocksdb://"] = "memory://"
    """WORKER_STORE: table store, ``memory://`` or ``rocksdb://`` (rocksdict)."""
    worker_datadir: Path = PROJECT_ROOT / ".vexnudge" / "worker"
    """WORKER_DATADIR: Faust data directory; must be unique per worker process."""
    worker_roles: Annotated[frozenset[str], NoDecode] = frozenset({"stream", "feedback", "store"})
    """WORKER_ROLES: what this worker runs: ``stream`` (ingest, analysis, clock), ``feedback``, ``store``."""
    worker_event_loop: Literal["uvloop", "asyncio"] = "uvloop"
    """WORKER_EVENT_LOOP: the worker's event loop: ``uvloop`` (faster I/O and scheduling) or ``asyncio``."""
    worker_web_port: int = 6066
    """WORKER_WEB_PORT: the worker's metrics/health port."""
    clock_mode: Literal["live", "replay"] = "live"
    """CLOCK_MODE: ``live`` ticks with the wall clock, ``replay`` with event time."""
    ingest_dedupe_window: int = Field(64, ge=1)
    """INGEST_DEDUPE_WINDOW: accepted envelope ids remembered per student for duplicates."""
    worker_batch_max: int = Field(200, ge=1, le=10000)
    """WORKER_BATCH_MAX: records the stream agent takes per batch (state written once per batch, after its outputs are delivered)."""
    worker_batch_within_ms: float = Field(10.0, gt=0, le=1000)
    """WORKER_BATCH_WITHIN_MS: how long a batch waits to fill: up to this much latency per stage, for throughput."""
    worker_gc_gen0: int = Field(50_000, ge=100, le=10_000_000)
    """WORKER_GC_GEN0: allocations between the garbage collector's youngest-generation passes in a worker (Python's default is 700; the worker allocates many short-lived objects per event, see docs/performance.md)."""
    consumer_fetch_max_wait_ms: int = Field(100, ge=1, le=5000)
    """CONSUMER_FETCH_MAX_WAIT_MS: how long a fetch waits for data (Faust fixes 1,500)."""
    broker_session_timeout_s: float = Field(60.0, ge=6.0)
    """BROKER_SESSION_TIMEOUT_S: a crashed worker's partitions move after this long."""
    broker_commit_interval_s: float = 1.0
    """BROKER_COMMIT_INTERVAL_S: how often consumed offsets are committed."""

    # --- Stopping and supervision ---------------------------------------------------
    shutdown_grace_s: float = Field(10.0, gt=0, le=600)
    """SHUTDOWN_GRACE_S: how long a worker or gateway may take to stop after SIGTERM (in-flight batch committed, streams closed); then the worker exits on its own and a parent (`vexnudge demo`, replay, tests) sends SIGKILL and says so."""

    # --- Hostile input -------------------------------------------------------------
    raw_max_bytes: int = Field(1_047_552, ge=65_536, le=100 * 1_048_576)
    """RAW_MAX_BYTES: longer raw lines are rejected as ``too_large`` (default 1 MiB minus 1 KiB of broker record overhead); dead letters are kept under it too."""
    clock_skew_max_s: float = Field(300.0, gt=0)
    """CLOCK_SKEW_MAX_S: an event time further than this after the line's ``received_at`` (live worker: after its own clock) is rejected as ``future_timestamp``."""
    max_sessions_per_student: int = Field(32, ge=2, le=10_000)
    """MAX_SESSIONS_PER_STUDENT: sessions whose state a student keeps; the least recently active is dropped first (and counted)."""
    student_state_max_bytes: int = Field(65_536, ge=4096)
    """STUDENT_STATE_MAX_BYTES: the most a student's analysis state may take; the least recently active sessions are dropped first (and counted)."""
    reorder_window_s: float = Field(5.0, ge=0, le=300)
    """REORDER_WINDOW_S: events at most this much older than their student's latest are analysed in event order, the clock that drives inactivity holding back as much; later ones are analysed as they come, counted and flagged late (0 = arrival order)."""
    tree_edit_max_cpu_ms: float = Field(500.0, gt=0, le=60_000)
    """TREE_EDIT_MAX_CPU_MS: a distance whose planned work would take longer than this is reported as not comparable (decided from the pair's size before computing, so replays agree)."""

    # --- Triggers ----------------------------------------------------------------
    trigger_poll_interval_s: float = Field(5.0, gt=0)
    """TRIGGER_POLL_INTERVAL_S: live-clock tick period per owned partition."""
    trigger_student_recency_hours: float = Field(24.0, gt=0)
    """TRIGGER_STUDENT_RECENCY_HOURS: idle students older than this are forgotten."""
    trigger_daemon_enabled: bool = False
    """TRIGGER_DAEMON_ENABLED: proactive lane on/off (off = detect only)."""
    trigger_disabled: Annotated[frozenset[str], NoDecode] = frozenset()
    """TRIGGER_DISABLED: comma-separated trigger types detected but not acted on."""
    wheel_spin_zero_runs: int = 6
    """WHEEL_SPIN_ZERO_RUNS: identical reruns in a row that fire wheel_spin."""
    resilience_zero_runs: int = 4
    """RESILIENCE_ZERO_RUNS: zero streak after which a change fires resilience."""
    explorer_edit_distance: int = 13
    """EXPLORER_EDIT_DISTANCE: one-step distance that fires explorer."""
    iterative_default_threshold: int = 6
    """ITERATIVE_DEFAULT_THRESHOLD: steady edits that fire iterative."""
    iterative_thresholds: Annotated[dict[str, int], NoDecode] = Field(
        default_factory=lambda: {"CastleCrasherPlus": 6, "CoralReefRescue": 5, "RoverRescue": 3}
    )
    """ITERATIVE_THRESHOLDS: per-playground overrides, ``Name=N,Other=M``."""
    inactive_after_s: float = 240.0
    """INACTIVE_AFTER_S: idle time (strictly more) that fires inactive."""
    inactive_realert_s: float = 600.0
    """INACTIVE_REALERT_S: re-alert period while still idle."""

    # --- Tree edit distance ------------------------------------------------------
    tree_edit_max_blocks: int = Field(2000, ge=1)
    """TREE_EDIT_MAX_BLOCKS: larger programs are reported as not comparable."""
    tree_edit_cache_size: int = Field(4096, ge=0)
    """TREE_EDIT_CACHE_SIZE: bounded cache of distances keyed by content hashes."""

    # --- PostgreSQL --------------------------------------------------------------
    database_url: SecretStr = SecretStr("postgresql://vexnudge@127.0.0.1:25432/vexnudge")
    """DATABASE_URL: the local stack's cluster by default (no password, loopback)."""
    db_pool_min_size: int = Field(1, ge=0)
    """DB_POOL_MIN_SIZE: connections the PostgreSQL pool keeps open."""
    db_pool_max_size: int = Field(10, ge=1)
    """DB_POOL_MAX_SIZE: most connections per process (keep above LLM_CONCURRENCY)."""
    db_command_timeout_s: float = Field(10.0, gt=0)
    """DB_COMMAND_TIMEOUT_S: default timeout of one SQL statement."""

    # --- Model server ------------------------------------------------------------
    ollama_host: str = "http://127.0.0.1:11434"
    """OLLAMA_HOST: base URL of the Ollama server."""
    ollama_model: str = "llama3.2"
    """OLLAMA_MODEL: the model that writes the nudges."""
    llm_timeout_s: float = Field(30.0, gt=0)
    """LLM_TIMEOUT_S: per-call timeout."""
    llm_max_retries: int = Field(2, ge=0)
    """LLM_MAX_RETRIES: retries after the first failed call."""
    llm_concurrency: int = Field(4, ge=1)
    """LLM_CONCURRENCY: model calls in flight per worker."""
    llm_fallback_template: bool = True
    """LLM_FALLBACK_TEMPLATE: answer with the template responder when no model answers."""
    feedback_max_attempts: int = Field(20, ge=1)
    """FEEDBACK_MAX_ATTEMPTS: failed passes of one nudge or answer before it is marked failed."""
    feedback_retry_after_s: float = Field(15.0, ge=0)
    """FEEDBACK_RETRY_AFTER_S: wait before retrying a pending nudge or answer (doubles per attempt)."""
    feedback_retry_max_delay_s: float = Field(600.0, ge=0)
    """FEEDBACK_RETRY_MAX_DELAY_S: the longest wait between two retries of one nudge or answer."""

    # --- Nudge policy ------------------------------------------------------------
    nudge_cooldown_s: float = Field(180.0, ge=0)
    """NUDGE_COOLDOWN_S: minimum event-time gap between two proactive nudges to a student."""
    inactive_realert_nudge_cap: int = Field(1, ge=0)
    """INACTIVE_REALERT_NUDGE_CAP: re-alert nudges allowed per idle spell."""
    nudge_max_age_s: float = Field(900.0, gt=0)
    """NUDGE_MAX_AGE_S: a trigger older than this (against the clock) is stale, never sent."""

    # --- Gateway -----------------------------------------------------------------
    gateway_host: str = "127.0.0.1"
    """GATEWAY_HOST: bind address of the SSE gateway."""
    gateway_port: int = 8080
    """GATEWAY_PORT: port of the SSE gateway."""
    token_secret: SecretStr | None = None
    """TOKEN_SECRET: HMAC key for student tokens (required by the gateway)."""
    admin_token: SecretStr | None = None
    """ADMIN_TOKEN: bearer token for the admin routes (required by the gateway)."""
    sse_heartbeat_s: float = Field(15.0, gt=0)
    """SSE_HEARTBEAT_S: comment heartbeat period on open streams."""
    sse_retry_ms: int = Field(3000, ge=100)
    """SSE_RETRY_MS: reconnection delay sent to browsers in the stream's ``retry:`` line."""
    sse_client_queue: int = Field(256, ge=1)
    """SSE_CLIENT_QUEUE: frames a stream may have waiting before its client is dropped as too slow."""
    sse_write_timeout_s: float = Field(10.0, gt=0)
    """SSE_WRITE_TIMEOUT_S: a client that takes longer to accept a write is dropped."""
    gateway_public_url: str | None = None
    """GATEWAY_PUBLIC_URL: base URL students open (``vexnudge token --url``); default http://host:port."""

    # --- Gateway limits (docs/gateway.md, "Limits") ------------------------------
    sse_max_streams_per_token: int = Field(3, ge=1, le=1000)
    """SSE_MAX_STREAMS_PER_TOKEN: open streams one student (or one board token) may hold; a new one closes its oldest."""
    sse_max_streams: int = Field(5000, ge=1)
    """SSE_MAX_STREAMS: open streams per gateway process; past it a new stream is refused with 503 and Retry-After."""
    sse_history_timeout_s: float = Field(5.0, gt=0)
    """SSE_HISTORY_TIMEOUT_S: longest wait for one page of a stream's history; past it the stream goes live and fills the history in later."""
    sse_history_retry_s: float = Field(5.0, gt=0)
    """SSE_HISTORY_RETRY_S: how often a live stream whose history could not be read tries again."""
    gateway_request_timeout_s: float = Field(10.0, gt=0)
    """GATEWAY_REQUEST_TIMEOUT_S: time a client has to send a request head (from connecting, or from its previous response) and a request body."""
    question_rate_limit: str = "5/minute;30/hour"
    """QUESTION_RATE_LIMIT: questions one student may ask per gateway process (``limits`` notation; ``;`` joins several windows)."""
    question_max_pending: int = Field(3, ge=1)
    """QUESTION_MAX_PENDING: unanswered questions a student may have before new ones are refused with 429."""
    question_republish_after_s: float = Field(30.0, gt=0)
    """QUESTION_REPUBLISH_AFTER_S: a pending question stored this long ago and never published is published again (checked as often)."""
    token_max_ttl_s: float = Field(7 * 86400.0, gt=0)
    """TOKEN_MAX_TTL_S: the longest lifetime of a student token, refused above it at signing and at verification."""
    board_token_ttl_s: float = Field(120.0, gt=0, le=3600)
    """BOARD_TOKEN_TTL_S: lifetime of the signed board token the teacher board's stream opens with."""

    @field_validator("question_rate_limit")
    @classmethod
    def _rate_limit_notation(cls, value: str) -> str:
        from limits import parse_many

        try:
            parse_many(value)
        except ValueError as exc:
            raise ValueError(f"QUESTION_RATE_LIMIT {value!r} is not a rate (e.g. 5/minute;30/hour): {exc}") from None
        return value

    # --- Local stack -------------------------------------------------------------
    stack_dir: Path = PROJECT_ROOT / ".vexnudge"
    """STACK_DIR: where the local stack keeps data, logs and pids."""
    cache_dir: Path = Path.home() / ".cache" / "vexnudge"
    """CACHE_DIR: where fetched broker jars are cached across clones."""
    kafka_port: int = 9092
    """KAFKA_PORT: the local broker's client port (controller = port + 1)."""
    postgres_port: int = 25432
    """POSTGRES_PORT: the local PostgreSQL cluster's port."""
    keep_stack: bool = False
    """KEEP_STACK: leave a stack that the tests (or scripts/test.sh) started running."""
    kafka_cds: bool = True
    """KAFKA_CDS: start the local broker with a class-data archive (faster warm starts)."""

    @model_validator(mode="before")
    @classmethod
    def _follow_local_ports(cls, data: object) -> object:
        """Moving KAFKA_PORT / POSTGRES_PORT moves the default client addresses along."""
        if isinstance(data, dict):
            if "kafka_port" in data and "kafka_bootstrap_servers" not in data:
                data["kafka_bootstrap_servers"] = f"127.0.0.1:{int(data['kafka_port'])}"
            if "postgres_port" in data and "database_url" not in data:
                data["database_url"] = f"postgresql://vexnudge@127.0.0.1:{int(data['postgres_port'])}/vexnudge"
        return data

    _csv = field_validator("trigger_disabled", "worker_roles", mode="before")(_split_csv)
    _map = field_validator("iterative_thresholds", mode="before")(_split_mapping)

    @field_validator("trigger_disabled")
    @classmethod
    def _known_types(cls, value: frozenset[str]) -> frozenset[str]:
        unknown = sorted(set(value) - set(TRIGGER_TYPES))
        if unknown:
            raise ValueError(f"unknown trigger type(s) {unknown}; known: {list(TRIGGER_TYPES)}")
        return value

    @field_validator("worker_roles")
    @classmethod
    def _known_roles(cls, value: frozenset[str]) -> frozenset[str]:
        unknown = sorted(set(value) - {"stream", "feedback", "store"})
        if unknown or not value:
            raise ValueError(f"worker roles {sorted(value)}: choose from stream, feedback, store")
        return value

    @property
    def group_id(self) -> str:
        """The worker's consumer group: APP_ID, or APP_ID-feedback for a worker without
        the stream role (its own group, so it never shares the stream's partitions)."""
        return self.app_id if "stream" in self.worker_roles else f"{self.app_id}-feedback"

    def topic(self, name: str) -> str:
        """The full topic name for the logical ``name`` (``vex.events`` ...)."""
        return f"{self.topic_prefix}{name}"


def default(name: str) -> Any:
    """The default of the :class:`Settings` field ``name``, not what the environment says.

    Pure values built from the settings (``NudgeConfig``, ``EngineConfig``,
    ``Limits``, the model client...) take their own keyword defaults from here, so
    every default is written once, in this module.
    """
    return Settings.model_fields[name].get_default(call_default_factory=True)


def load_settings(**overrides: object) -> Settings:
    """Read the environment once; ``overrides`` win (tests and CLI flags)."""
    return Settings(**overrides)  # type: ignore[arg-type]
