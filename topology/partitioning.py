"""Kafka's default key partitioning (murmur2), so pure tools can tell which
partition a student's records live on without a client."""

from __future__ import annotations

_M, _R, _SEED, _MASK = 0x5BD1E995, 24, 0x9747B28C, 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """The 32-bit MurmurHash2 of ``data`` as Kafka's clients compute it."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[length - length % 4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a string key."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions
