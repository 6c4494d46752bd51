"""The guarded, caching entry point the stream engine calls per run.

:class:`DistanceCalculator` adds to :func:`tree_edit.distance`:

* a byte-identical-XML short-circuit (distance 0 without parsing);
* a bounded LRU cache keyed by the two programs' content hashes (the pair is
  unordered: the distance is symmetric);
* guards: a program of more than ``max_blocks`` blocks, or a pair whose exact
  computation would fill more than ``max_cells`` table cells, is reported as
  :class:`~tree_edit.errors.NotComparable` instead of stalling the caller;
* counters (:class:`DistanceStats`) and an optional callback on every refusal,
  for the adapter's metrics.

The calculator holds no global state; build one per worker (or per test) with
the sizes from the settings.  It is not thread-safe.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from tree_edit.distance import distance, work
from tree_edit.errors import NotComparable, NotComparableReason
from tree_edit.parse import parse_workspace
from tree_edit.tree import Tree
from tree_edit.workspace import Program

#: Default work limit, about one second of the C kernel (~2 ns per cell).
#: Blockly-like pairs of 2,000 blocks need 0.6-1.4e8 cells; pathological
#: shapes (deep nesting that defeats both decompositions) can need 1e12.
DEFAULT_MAX_CELLS = 400_000_000
DEFAULT_MAX_BLOCKS = 2000
DEFAULT_CACHE_SIZE = 4096

_Key = tuple[str, str, str]


class _Refusal(NamedTuple):
    """A cached guard refusal (a fresh exception is raised on every hit)."""

    reason: NotComparableReason
    n_blocks: tuple[int, int]
    limit: int


@dataclass
class DistanceStats:
    """What a calculator did, since it was built.

    :ivar identical: pairs answered 0 by the identical-XML or identical-program check.
    :ivar cache_hits: pairs answered from the cache.
    :ivar computed: pairs whose distance was computed.
    :ivar not_comparable: pairs refused by a guard (cached refusals included).
    """

    identical: int = 0
    cache_hits: int = 0
    computed: int = 0
    not_comparable: int = 0


class DistanceCalculator:
    """Guarded, cached edit distances between programs.

    :param cache_size: pairs remembered (0 disables the cache).
    :param max_blocks: programs with more blocks are not compared.
    :param max_cells: pairs needing more table cells are not compared.
    :param on_not_comparable: called with each :class:`NotComparable` before it is raised.
    """

    def __init__(
        self,
        cache_size: int = DEFAULT_CACHE_SIZE,
        max_blocks: int = DEFAULT_MAX_BLOCKS,
        max_cells: int = DEFAULT_MAX_CELLS,
        on_not_comparable: Callable[[NotComparable], None] | None = None,
    ) -> None:
        if cache_size < 0 or max_blocks < 1 or max_cells < 1:
            raise ValueError("cache_size must be >= 0, max_blocks and max_cells >= 1")
        self.cache_size = cache_size
        self.max_blocks = max_blocks
        self.max_cells = max_cells
        self.on_not_comparable = on_not_comparable
        self.stats = DistanceStats()
        self._cache: OrderedDict[_Key, int | _Refusal] = OrderedDict()

    def between(self, a: Tree, b: Tree) -> int:
        """Distance between two parsed programs.

        :raises NotComparable: a guard refused the pair.
        """
        key = _key("tree", a.digest, b.digest)
        if key in self._cache:
            return self._hit(key)
        return self._settle(key, a, b)

    def between_xml(self, xml_a: str, xml_b: str) -> int:
        """Distance between two workspace XML strings (``""`` = empty program).

        :raises WorkspaceError: one of them is not well-formed XML.
        :raises NotComparable: a guard refused the pair.
        """
        if xml_a == xml_b:
            self.stats.identical += 1
            return 0
        key = _key("xml", _text_digest(xml_a), _text_digest(xml_b))
        if key in self._cache:
            return self._hit(key)
        return self._settle(key, parse_workspace(xml_a), parse_workspace(xml_b))

    def between_programs(self, a: Program, b: Program) -> int:
        """Distance between two extracted run programs (identical XML gives 0).

        :raises NotComparable: a guard refused the pair.
        """
        if a.xml == b.xml:
            self.stats.identical += 1
            return 0
        return self.between(a.tree, b.tree)

    def _settle(self, key: _Key, a: Tree, b: Tree) -> int:
        """Compute (or refuse) a pair that is not cached, and remember the outcome."""
        result = self._compute(a, b)
        self._store(key, result)
        return self._deliver(result)

    def _compute(self, a: Tree, b: Tree) -> int | _Refusal:
        sizes = (a.n_blocks, b.n_blocks)
        if max(sizes) > self.max_blocks:
            return _Refusal(NotComparableReason.TOO_MANY_BLOCKS, sizes, self.max_blocks)
        if a.same_program(b):
            self.stats.identical += 1
            return 0
        if work(a, b) > self.max_cells:
            return _Refusal(NotComparableReason.TOO_COSTLY, sizes, self.max_cells)
        self.stats.computed += 1
        return distance(a, b)

    def _hit(self, key: _Key) -> int:
        self.stats.cache_hits += 1
        self._cache.move_to_end(key)
        return self._deliver(self._cache[key])

    def _deliver(self, result: int | _Refusal) -> int:
        if isinstance(result, int):
            return result
        refused = NotComparable(*result)
        self.stats.not_comparable += 1
        if self.on_not_comparable is not None:
            self.on_not_comparable(refused)
        raise refused

    def _store(self, key: _Key, result: int | _Refusal) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = result
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def _key(kind: str, digest_a: str, digest_b: str) -> _Key:
    """Unordered pair key: the distance is symmetric."""
    low, high = sorted((digest_a, digest_b))
    return kind, low, high


def _text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
