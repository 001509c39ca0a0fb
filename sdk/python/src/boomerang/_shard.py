"""The shard of a task and of a task id, computed exactly as the server's
store does (testdata/conformance/shards.json holds the vectors), so a
client that routes can send each request to its shard's leader."""

from __future__ import annotations

_MASK = (1 << 64) - 1
_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
# A task id holds its shard's counter in its low 48 bits, the shard above.
_ID_COUNTER_BITS = 48


def _mix(z: int) -> int:
    """The splitmix64 finalizer, modulo 2**64."""
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & _MASK
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def shard_of_group(shards: int, client: str, group: str) -> int:
    """The shard among shards (a power of two) of a client's group: FNV-1a
    64 over the client, a 0 byte and the group, mixed."""
    h = _FNV_OFFSET
    for b in client.encode() + b"\x00" + group.encode():
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return _mix(h) & (shards - 1)


def shard_of_task(shards: int, client: str, group: str, idempotency_key: str, replace_key: str) -> int | None:
    """The shard a new task of client goes to: its group's, else its
    idempotency key's, else its replace key's; None for an ungrouped task
    without keys, which may go to any shard."""
    if group:
        return shard_of_group(shards, client, group)
    if idempotency_key:
        return shard_of_group(shards, client, "\x00" + idempotency_key)
    if replace_key:
        return shard_of_group(shards, client, "\x00replace\x00" + replace_key)
    return None


def shard_of_id(task_id: int) -> int:
    """The shard a task id carries."""
    return (task_id >> _ID_COUNTER_BITS) & 0xFFFF
