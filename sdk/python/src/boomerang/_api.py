"""The operations of the service as typed methods, and shorter forms of
the common ones, over a call method that a client supplies."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from google.protobuf.message import Message

from ._operations import OPERATIONS
from .errors import ProtocolError
from .v1 import boomerang_pb2 as pb


class Api(ABC):
    """Every operation of boomerang.v1.BoomerangService as a method named
    after it, taking the request message or its fields as keywords
    (`get_task(id=42)`), and returning the response message."""

    @abstractmethod
    def call(self, op: str, request: Message | None = None, *, timeout: float | None = None) -> Message:
        """Runs the operation named op and returns its response message."""

    def _op(self, op: str, request: Message | None, fields: dict[str, Any], timeout: float | None) -> Any:
        if fields:
            if request is not None:
                raise TypeError(f"{op}: pass a request message or its fields, not both")
            request = OPERATIONS[op][0](**fields)
        return self.call(op, request, timeout=timeout)

    def login(
        self, request: pb.LoginRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.LoginResponse:
        """Logs in and makes the new session the client's."""
        return self._op("login", request, fields, timeout)

    def refresh_session(
        self, request: pb.RefreshSessionRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.RefreshSessionResponse:
        """Replaces the session with a new one that expires later."""
        return self._op("refresh_session", request, fields, timeout)

    def register_client(
        self, request: pb.RegisterClientRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.RegisterClientResponse:
        """Registers a client (admin only). The response carries its
        signing secret, shown only this once."""
        return self._op("register_client", request, fields, timeout)

    def deregister_client(
        self, request: pb.DeregisterClientRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.DeregisterClientResponse:
        """Removes a client (admin only)."""
        return self._op("deregister_client", request, fields, timeout)

    def list_clients(
        self, request: pb.ListClientsRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.ListClientsResponse:
        """Lists the registered clients (admin only)."""
        return self._op("list_clients", request, fields, timeout)

    def register_task(
        self, request: pb.RegisterTaskRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.RegisterTaskResponse:
        """Schedules a task; answered once the task is durable. See
        schedule for a shorter form."""
        return self._op("register_task", request, fields, timeout)

    def update_task(
        self, request: pb.UpdateTaskRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.UpdateTaskResponse:
        """Changes a task's payload, due time or repeat interval."""
        return self._op("update_task", request, fields, timeout)

    def cancel_task(
        self, request: pb.CancelTaskRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.CancelTaskResponse:
        """Deletes a task. A task whose delivery is under way raises
        ConflictError."""
        return self._op("cancel_task", request, fields, timeout)

    def get_task(
        self, request: pb.GetTaskRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.GetTaskResponse:
        """Returns one task."""
        return self._op("get_task", request, fields, timeout)

    def list_tasks(
        self, request: pb.ListTasksRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.ListTasksResponse:
        """Returns one page of tasks. See tasks for all pages."""
        return self._op("list_tasks", request, fields, timeout)

    def list_dead_letters(
        self, request: pb.ListDeadLettersRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.ListDeadLettersResponse:
        """Returns one page of dead letters. See dead_letters for all pages."""
        return self._op("list_dead_letters", request, fields, timeout)

    def get_dead_letter(
        self, request: pb.GetDeadLetterRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.GetDeadLetterResponse:
        """Returns one dead letter."""
        return self._op("get_dead_letter", request, fields, timeout)

    def replay_dead_letter(
        self, request: pb.ReplayDeadLetterRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.ReplayDeadLetterResponse:
        """Schedules a dead letter's task again."""
        return self._op("replay_dead_letter", request, fields, timeout)

    def delete_dead_letter(
        self, request: pb.DeleteDeadLetterRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.DeleteDeadLetterResponse:
        """Deletes a dead letter."""
        return self._op("delete_dead_letter", request, fields, timeout)

    def get_group(
        self, request: pb.GetGroupRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.GetGroupResponse:
        """Returns a group's state."""
        return self._op("get_group", request, fields, timeout)

    def unblock_group(
        self, request: pb.UnblockGroupRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.UnblockGroupResponse:
        """Delivers a blocked group's head again, then lets the group go on."""
        return self._op("unblock_group", request, fields, timeout)

    def skip_group(
        self, request: pb.SkipGroupRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.SkipGroupResponse:
        """Leaves a blocked group's head in the dead letter queue and lets
        the group go on."""
        return self._op("skip_group", request, fields, timeout)

    def cancel_tasks(
        self, request: pb.CancelTasksRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.CancelTasksResponse:
        """Cancels every task of a client, or of one of its groups, except
        those being delivered; ``dry_run`` only counts them."""
        return self._op("cancel_tasks", request, fields, timeout)

    def purge_dead_letters(
        self, request: pb.PurgeDeadLettersRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.PurgeDeadLettersResponse:
        """Deletes every dead letter matching a filter, except groups'
        blocked heads; ``dry_run`` only counts them."""
        return self._op("purge_dead_letters", request, fields, timeout)

    def get_server_info(
        self, request: pb.GetServerInfoRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.GetServerInfoResponse:
        """Returns the server's version, addresses and limits."""
        return self._op("get_server_info", request, fields, timeout)

    # ---- Shorter forms of the common ones ----

    def schedule(
        self,
        payload: bytes | str,
        *,
        after: float | timedelta | None = None,
        at: datetime | float | None = None,
        every: float | timedelta | None = None,
        group: str = "",
        idempotency_key: str = "",
        mode: pb.DispatchMode | None = None,
        callback: pb.Callback | None = None,
        retry: pb.RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> pb.Task:
        """Registers a task with payload (bytes, or a str sent as UTF-8),
        due now unless after (seconds or a timedelta from now) or at (a
        datetime or Unix seconds) says otherwise, repeating every (seconds
        or a timedelta) if given, and returns it once durable."""
        req = pb.RegisterTaskRequest(
            payload=payload.encode() if isinstance(payload, str) else payload,
            group=group,
            idempotency_key=idempotency_key,
        )
        if after is not None:
            req.delay_ms = _millis(after)
        elif at is not None:
            req.fire_at_ms = round(at.timestamp() * 1000) if isinstance(at, datetime) else round(at * 1000)
        if every is not None:
            req.repeat_interval_ms = _millis(every)
        if mode is not None:
            req.mode = mode
        if callback is not None:
            req.callback.CopyFrom(callback)
        if retry is not None:
            req.retry.CopyFrom(retry)
        resp = self.register_task(req, timeout=timeout)
        if not resp.HasField("task"):
            raise ProtocolError("the registration returned no task")
        return resp.task

    def cancel(self, task_id: int, *, timeout: float | None = None) -> None:
        """Deletes the task with task_id."""
        self.cancel_task(pb.CancelTaskRequest(id=task_id), timeout=timeout)

    def tasks(self, *, timeout: float | None = None, **query: Any) -> Iterator[pb.Task]:
        """Yields every task the query (ListTasksRequest's fields) selects,
        page after page."""
        page = pb.ListTasksRequest(**query)
        while True:
            resp = self.list_tasks(page, timeout=timeout)
            yield from resp.tasks
            if resp.next_page_token == 0:
                return
            page.page_token = resp.next_page_token

    def dead_letters(self, *, timeout: float | None = None, **query: Any) -> Iterator[pb.DeadLetter]:
        """Yields every dead letter the query (ListDeadLettersRequest's
        fields) selects, page after page."""
        page = pb.ListDeadLettersRequest(**query)
        while True:
            resp = self.list_dead_letters(page, timeout=timeout)
            yield from resp.dead_letters
            if resp.next_page_token == 0:
                return
            page.page_token = resp.next_page_token


def _millis(value: float | timedelta) -> int:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    return round(seconds * 1000)
