"""The start-up check of the seam: the library versions it was written for,
and every internal it relies on, are there.

The seam (this package) replaces or reads parts of Faust, mode and aiokafka
that are not their public API.  An upgrade of any of the three can rename or
remove them without a deprecation; the worker would then fail deep inside a
rebalance or a commit, or worse, keep running with a guarantee quietly gone.
:func:`verify_internals` runs before the worker builds its app and refuses to
go on, naming what differs and what to do.

:data:`INTERNALS` is the one list of those internals: the check walks it, and
a unit test holds it equal to the table in ``README.md`` beside this file
(which says, for each, why the seam needs it and which test pins it).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from pathlib import Path

#: The versions the seam was written and measured for.  faust-streaming and
#: aiokafka equal their ``==`` pins in pyproject.toml; mode-streaming equals
#: the lower bound there (``>=0.7.1``), the version installed with them.
FAUST_VERSION = "0.15.3"
AIOKAFKA_VERSION = "0.14.0"
MODE_VERSION = "0.7.1"
VERSIONS: Mapping[str, str] = {
    "faust-streaming": FAUST_VERSION,
    "aiokafka": AIOKAFKA_VERSION,
    "mode-streaming": MODE_VERSION,
}

_CONSUMER = "faust.transport.consumer.Consumer"
_DRIVER = "faust.transport.drivers.aiokafka"

#: (owner, attribute): every internal of Faust, mode or aiokafka the seam
#: relies on.  ``owner`` is the dotted path of the upstream class (or module,
#: or object) that defines ``attribute`` — never one of the seam's subclasses,
#: where an overridden method would always be found.  Keep it equal to the
#: table in README.md (a unit test compares them).
INTERNALS: tuple[tuple[str, str], ...] = (
    # Faust's consumer: offset book-keeping (transport.py, handover.py, offsets.py)
    (_CONSUMER, "_acked"),
    (_CONSUMER, "_committed_offset"),
    (_CONSUMER, "_read_offset"),
    (_CONSUMER, "_gap"),
    (_CONSUMER, "_unacked_messages"),
    (_CONSUMER, "_paused_partitions"),
    (_CONSUMER, "_n_acked"),
    (_CONSUMER, "_commit_every"),
    (_CONSUMER, "_add_gap"),
    (_CONSUMER, "_is_changelog_tp"),
    (_CONSUMER, "callback"),
    (_CONSUMER, "suspend_flow"),
    ("faust.transport.consumer", "CONSUMER_FETCHING"),
    ("faust.transport.conductor.Conductor", "acks_enabled_for"),
    # Faust's aiokafka driver: what the seam's subclasses override (transport.py)
    (f"{_DRIVER}.Consumer", "_drain_messages"),
    (f"{_DRIVER}.Consumer", "_new_offset"),
    (f"{_DRIVER}.Consumer", "_new_consumer_thread"),
    (f"{_DRIVER}.Consumer", "on_partitions_assigned"),
    (f"{_DRIVER}.Consumer", "on_partitions_revoked"),
    (f"{_DRIVER}.Consumer", "resume_partitions"),
    (f"{_DRIVER}.Consumer", "perform_seek"),
    (f"{_DRIVER}.Consumer", "consumer_stopped_errors"),
    (f"{_DRIVER}.AIOKafkaConsumerThread", "_fetch_records"),
    (f"{_DRIVER}.AIOKafkaConsumerThread", "_create_worker_consumer"),
    (f"{_DRIVER}.Transport", "Consumer"),
    ("faust.transport.drivers.TRANSPORTS", "aliases"),
    (f"{_DRIVER}.Producer", "_ensure_producer"),
    ("faust.Schema", "compile"),
    # mode: the service and logger the hand-over loop drives (handover.py)
    ("mode.Service", "_stopped"),
    ("mode.Service", "diag"),
    ("mode.Service", "wait_first"),
    ("mode.utils.logging.CompositeLogger", "dev"),
    # The worker (worker.py)
    ("faust.worker.Worker", "on_setup_root_logger"),
    ("faust.worker.Worker", "spinner"),
    ("mode.worker.Worker", "_schedule_shutdown"),
    # aiokafka: the consumer (transport.py, offsets.py)
    ("aiokafka.AIOKafkaConsumer", "_fetch_max_wait_ms"),
    ("aiokafka.AIOKafkaConsumer", "_client"),
    ("aiokafka.client.AIOKafkaClient", "force_metadata_update"),
    ("aiokafka.consumer.fetcher.Fetcher", "fetched_records"),
    # aiokafka: the producer's accumulator (outbox.py)
    ("aiokafka.AIOKafkaProducer", "_message_accumulator"),
    ("aiokafka.producer.message_accumulator.MessageAccumulator", "_batches"),
    ("aiokafka.producer.message_accumulator.MessageBatch", "_builder"),
    ("aiokafka.producer.message_accumulator.MessageBatch", "future"),
)

README = Path(__file__).with_name("README.md")


class SeamMismatch(RuntimeError):
    """The installed Faust, mode or aiokafka is not what the seam was written for.

    ``versions``: (distribution, installed or None, expected) of each that
    differs; ``missing``: ``owner.attribute`` of each internal not found.
    """

    def __init__(self, versions: list[tuple[str, str | None, str]], missing: list[str]) -> None:
        self.versions, self.missing = versions, missing
        super().__init__(_explain(versions, missing))


def verify_internals() -> None:
    """Raise :class:`SeamMismatch` unless the installed faust-streaming,
    aiokafka and mode-streaming are the versions in :data:`VERSIONS` and
    every internal in :data:`INTERNALS` is there."""
    versions = list(_differing_versions(metadata.version))
    missing = [f"{owner}.{attribute}" for owner, attribute in INTERNALS if not _defines(owner, attribute)]
    if versions or missing:
        raise SeamMismatch(versions, missing)


def _differing_versions(version_of: Callable[[str], str]) -> Iterable[tuple[str, str | None, str]]:
    for name, expected in VERSIONS.items():
        try:
            installed: str | None = version_of(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != expected:
            yield name, installed, expected


def _explain(versions: list[tuple[str, str | None, str]], missing: list[str]) -> str:
    lines = ["the Faust seam (topology/seam/) does not match the installed Faust, mode or aiokafka:"]
    lines += [
        f"  {name}: installed {installed or 'nothing'}, the seam was written for {expected}"
        for name, installed, expected in versions
    ]
    if missing:
        lines.append(f"  {len(missing)} internal(s) the seam relies on are missing:")
        lines += [f"    {name}" for name in missing]
    pins = " ".join(f"{name}=={version}" for name, version in VERSIONS.items())
    lines += [
        "Either install the versions the seam was written for again "
        f"(pip install {pins}), or update the seam for the new versions: "
        'follow "Upgrading Faust, mode or aiokafka" in topology/seam/README.md (adapt the seam\'s modules, '
        "update the README's table and the versions in topology/seam/check.py, run the tests the README "
        "names, measure again).",
    ]
    return "\n".join(lines)


def _resolve(owner: str) -> object:
    """The module, class or object at the dotted path ``owner``."""
    parts = owner.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(owner)


def _defines(owner: str, attribute: str) -> bool:
    """Whether ``attribute`` exists on ``owner``, or (a class) on its instances.

    Methods, properties, class attributes and slots are found with
    ``hasattr`` on the class itself.  An attribute that only exists on
    instances (``self._acked = ...``) is looked for in the source of the class
    and its bases: an assignment to ``self.<attribute>`` in any of their
    methods.  That is cheaper and safer than building an instance at start-up
    (Faust's consumer needs an app and a transport, aiokafka's clients a
    running event loop), and a rename upstream removes the assignment with
    the attribute.  Reading the sources costs one parse per module involved
    (six), about 0.1 s once per worker start, against the seconds the worker
    then takes to join its group.
    """
    try:
        target = _resolve(owner)
    except (ImportError, AttributeError):
        return False
    if hasattr(target, attribute):
        return True
    if not isinstance(target, type):
        return False
    return any(attribute in _instance_attributes(klass) for klass in target.__mro__ if klass is not object)


@functools.cache
def _instance_attributes(klass: type) -> frozenset[str]:
    """The names a class's own methods assign on ``self`` (empty without source)."""
    try:
        path = inspect.getsourcefile(klass)
    except TypeError:  # a built-in class
        return frozenset()
    if path is None:
        return frozenset()
    tree = _parsed(path)
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in tree.body:  # the seam's owners are all classes at a module's top level
        if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
            names |= _assigned_on_self(node)
    return frozenset(names)


@functools.cache
def _parsed(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def _assigned_on_self(klass: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(klass):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):  # tuple targets: self.a, self.b = ...
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    names.add(part.attr)
    return names
