"""The routing view (GetRoutes) in the shape lookups need, and which
requests are routed and which may be sent again."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from ._shard import shard_of_group, shard_of_id, shard_of_task
from .v1 import boomerang_pb2 as pb

#: Where the client's own connection is meant instead of another node's.
HOME = ""

# Operations that are never answered NOT_LEADER: those on the session
# itself and the routing view, and batches (their node forwards what it
# does not lead).
_UNROUTED = frozenset({"login", "refresh_session", "logout", "get_routes", "get_server_info", "register_tasks"})

# Operations that may be sent again after a connection broke with them in
# flight: they change nothing. A registration with an idempotency key is
# one too: a repeat finds what the first attempt did.
_READS = frozenset(
    {
        "get_task",
        "get_task_attempts",
        "get_dead_letter",
        "get_group",
        "list_tasks",
        "list_dead_letters",
        "list_groups",
        "get_stats",
    }
)

# Operations on one task, or on a dead letter (which keeps its task's id).
_BY_ID = frozenset(
    {
        "update_task",
        "cancel_task",
        "get_task",
        "get_task_attempts",
        "get_dead_letter",
        "replay_dead_letter",
        "delete_dead_letter",
    }
)

_BY_GROUP = frozenset({"get_group", "unblock_group", "skip_group"})


@dataclass(frozen=True)
class View:
    """One routing view. Never changed once published: a NOT_LEADER hint
    makes a changed copy."""

    standalone: bool
    shards: int = 0
    revision: int = 0
    client: str = ""  # the caller, whose groups' shards depend on it
    node: str = ""  # the node the client's own connection reaches
    addresses: dict[str, str] = dataclasses.field(default_factory=dict)  # node id -> raw TCP address
    leaders: tuple[str, ...] = ()  # shard -> node id; "" unknown

    @classmethod
    def of(cls, r: pb.GetRoutesResponse) -> View:
        return cls(
            standalone=r.standalone or r.shards == 0,
            shards=r.shards,
            revision=r.revision,
            client=r.client,
            node=r.node,
            addresses={n.id: n.tcp_address for n in r.nodes},
            leaders=tuple(r.leaders),
        )

    def address(self, shard: int) -> str:
        """The address of shard's leader, or HOME: the client's own node
        leads it, or no leader is known."""
        if shard >= len(self.leaders) or self.leaders[shard] == self.node:
            return HOME
        return self.addresses.get(self.leaders[shard], HOME)

    def with_leader(self, shard: int, node: str, address: str) -> View:
        if shard >= len(self.leaders) or not node:
            return self
        leaders = list(self.leaders)
        leaders[shard] = node
        return dataclasses.replace(self, leaders=tuple(leaders), addresses={**self.addresses, node: address})

    def target(self, request: pb.Request, spread: itertools.count[int]) -> str:
        """Where request goes: its shard leader's address, or HOME. An
        ungrouped task without keys may go to any node: spread picks the
        leader of one shard after another."""
        op = request.WhichOneof("body")
        if self.standalone:
            return HOME
        if op == "register_task":
            t = request.register_task
            shard = shard_of_task(self.shards, self.client, t.group, t.idempotency_key, t.replace_key)
            return self.address(next(spread) % self.shards if shard is None else shard)
        if op in _BY_GROUP:
            body = getattr(request, op)
            return self.address(shard_of_group(self.shards, body.client or self.client, body.group))
        if op in _BY_ID:
            return self.address(shard_of_id(getattr(request, op).id))
        return HOME

    def task_address(self, client: str, t: pb.RegisterTaskRequest) -> str:
        """The address of the leader of t's shard; HOME for a task that may
        go anywhere (the client's own node places it on a shard it leads)."""
        shard = shard_of_task(self.shards, client or self.client, t.group, t.idempotency_key, t.replace_key)
        return HOME if shard is None else self.address(shard)


def routable(op: str | None) -> bool:
    """Whether a request may be answered NOT_LEADER."""
    return op is not None and op not in _UNROUTED


def repeatable(request: pb.Request) -> bool:
    """Whether request may be sent again after a connection broke with it
    in flight."""
    op = request.WhichOneof("body")
    if op == "register_task":
        return request.register_task.idempotency_key != ""
    return op in _READS
