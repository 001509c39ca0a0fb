"""The operations of boomerang.v1.BoomerangService, by their name in the
raw TCP envelope's body oneof (login, register_task, ...)."""

from __future__ import annotations

from google.protobuf.message import Message

from .v1 import boomerang_pb2 as pb


def _operations() -> dict[str, tuple[type[Message], type[Message]]]:
    responses = {f.name: f.message_type.name for f in pb.Response.DESCRIPTOR.oneofs_by_name["body"].fields}
    return {
        f.name: (getattr(pb, f.message_type.name), getattr(pb, responses[f.name]))
        for f in pb.Request.DESCRIPTOR.oneofs_by_name["body"].fields
    }


#: Operation name -> (request message class, response message class).
OPERATIONS = _operations()

#: Operations whose response may legitimately have no fields, which a
#: server may leave out of the envelope altogether.
MAY_BE_EMPTY = frozenset(
    {
        "deregister_client",
        "list_clients",
        "cancel_task",
        "list_tasks",
        "list_dead_letters",
        "delete_dead_letter",
        "unblock_group",
        "skip_group",
        "cancel_tasks",
        "purge_dead_letters",
        "register_tasks",
    }
)
