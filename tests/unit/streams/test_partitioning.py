"""Our murmur2 partitioning equals the Kafka client's."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given, settings
from hypothesis import strategies as st

from topology.partitioning import partition_for


@settings(max_examples=500)
@given(st.text(min_size=0, max_size=40), st.integers(min_value=1, max_value=64))
def test_same_partition_as_the_kafka_client(key: str, n: int) -> None:
    expected = DefaultPartitioner()(key.encode(), list(range(n)), list(range(n)))
    assert partition_for(key, n) == expected
