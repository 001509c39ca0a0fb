"""The operations of the service as typed methods, and shorter forms of
the common ones, over a call method that a client supplies."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from google.protobuf.message import Message

from ._operations import OPERATIONS
from .errors import InvalidRequestError, ProtocolError, error_from_wire
from .frames import encode_varint
from .v1 import boomerang_pb2 as pb

#: The most tasks the server takes in one register_tasks request.
MAX_BATCH = 1000

# Room a register_tasks request needs beyond its tasks: request id, session
# id, framing.
_ENVELOPE_ROOM = 512


@dataclass(frozen=True)
class BatchTask:
    """One task of schedule_batch: a payload and what schedule takes for
    it."""

    payload: bytes | str
    after: float | timedelta | None = None
    at: datetime | float | None = None
    every: float | timedelta | None = None
    group: str = ""
    idempotency_key: str = ""
    mode: pb.DispatchMode | None = None
    callback: pb.Callback | None = None
    retry: pb.RetryPolicy | None = None
    cron: str = ""  # a calendar schedule instead of every, e.g. "0 9 * * MON-FRI"
    time_zone: str = ""  # the IANA zone cron is read in; "" = UTC
    replace_key: str = ""  # replaces the waiting task with this key instead of adding one
    debounce: float | timedelta | None = None  # with replace_key: due this long after the latest registration
    max_wait: float | timedelta | None = None  # with debounce: at most this long after the first


class ScheduleResult(NamedTuple):
    """One task's outcome in schedule_batch: the registered task, without
    its payload (the caller has it), or the error that kept it from being
    registered: a BoomerangError the server gave for this task or for its
    whole request, a lost connection, a timeout, a closed client."""

    task: pb.Task | None
    created: bool  # False when an idempotency key matched an earlier registration
    error: BaseException | None


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

    def register_tasks(
        self, request: pb.RegisterTasksRequest | None = None, /, *, timeout: float | None = None, **fields: Any
    ) -> pb.RegisterTasksResponse:
        """Schedules up to MAX_BATCH tasks in one request; each succeeds
        or fails on its own, and the results come in the order of the
        tasks, without payloads. The request must fit the server's frame
        limit. See schedule_batch, which splits any number of tasks into
        such requests."""
        return self._op("register_tasks", request, fields, timeout)

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
        cron: str = "",
        time_zone: str = "",
        replace_key: str = "",
        debounce: float | timedelta | None = None,
        max_wait: float | timedelta | None = None,
        timeout: float | None = None,
    ) -> pb.Task:
        """Registers a task with payload (bytes, or a str sent as UTF-8),
        due now unless after (seconds or a timedelta from now) or at (a
        datetime or Unix seconds) says otherwise, repeating every (seconds
        or a timedelta) if given, or on the cron schedule (five fields, or six
        with seconds first) read in time_zone (IANA, "" = UTC), from its first
        occurrence at or after the due time, and returns it once durable.
        With replace_key it replaces the client's waiting task with that key in
        the same group (payload and due time; id and place are kept) instead of
        adding one, unless that task's attempt has started; debounce (seconds or
        a timedelta) then makes it due that long after the latest registration
        with the key, and max_wait no later than that long after the first.
        register_task's response says whether a task was replaced."""
        req = _registration(
            BatchTask(
                payload, after, at, every, group, idempotency_key, mode, callback, retry,
                cron, time_zone, replace_key, debounce, max_wait,
            )
        )
        resp = self.register_task(req, timeout=timeout)
        if not resp.HasField("task"):
            raise ProtocolError("the registration returned no task")
        return resp.task

    def schedule_batch(self, tasks: Iterable[BatchTask], *, timeout: float | None = None) -> list[ScheduleResult]:
        """Registers tasks and returns one result per task, in order; each
        succeeds or fails on its own, as with schedule. The tasks go in
        register_tasks requests of at most MAX_BATCH tasks and the server's
        frame limit, one after another (each within timeout), so a group's
        tasks keep their order; a task too large for a frame alone fails
        with InvalidRequestError without being sent. An error that fails a
        whole request is the error of each of its tasks and of the later
        requests' tasks, which are not sent: this never raises for them."""
        reqs = [_registration(t) for t in tasks]
        results: list[ScheduleResult] = [ScheduleResult(None, False, None)] * len(reqs)
        frame = self._frame_limit()
        failed: BaseException | None = None
        for part in _split(reqs, frame - _ENVELOPE_ROOM if frame > _ENVELOPE_ROOM else 0, results, frame):
            try:
                if failed is not None:
                    raise failed
                resp = self.register_tasks(pb.RegisterTasksRequest(tasks=[reqs[i] for i in part]), timeout=timeout)
                if len(resp.results) != len(part):
                    raise ProtocolError(f"{len(resp.results)} results for {len(part)} tasks")
                for i, r in zip(part, resp.results):
                    results[i] = _result_of(r)
            except Exception as err:  # noqa: BLE001 - every failure of a request is its tasks' result
                failed = failed or err
                for i in part:
                    results[i] = ScheduleResult(None, False, err)
        return results

    def _frame_limit(self) -> int:
        """The server's frame limit in bytes, for schedule_batch; 0 when
        unknown."""
        return 0

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


def _registration(t: BatchTask) -> pb.RegisterTaskRequest:
    """The request schedule sends for a task."""
    req = pb.RegisterTaskRequest(
        payload=t.payload.encode() if isinstance(t.payload, str) else t.payload,
        group=t.group,
        idempotency_key=t.idempotency_key,
        cron=t.cron,
        time_zone=t.time_zone,
        replace_key=t.replace_key,
    )
    if t.debounce is not None:
        req.debounce_ms = _millis(t.debounce)
    if t.max_wait is not None:
        req.max_wait_ms = _millis(t.max_wait)
    if t.after is not None:
        req.delay_ms = _millis(t.after)
    elif t.at is not None:
        req.fire_at_ms = round(t.at.timestamp() * 1000) if isinstance(t.at, datetime) else round(t.at * 1000)
    if t.every is not None:
        req.repeat_interval_ms = _millis(t.every)
    if t.mode is not None:
        req.mode = t.mode
    if t.callback is not None:
        req.callback.CopyFrom(t.callback)
    if t.retry is not None:
        req.retry.CopyFrom(t.retry)
    return req


def _split(
    reqs: list[pb.RegisterTaskRequest], limit: int, results: list[ScheduleResult], frame: int
) -> Iterator[list[int]]:
    """Yields lists of indexes of reqs: at most MAX_BATCH and limit bytes
    (0: no byte limit) each. A request too large alone gets its error in
    results and is left out."""
    part: list[int] = []
    size = 0
    for i, r in enumerate(reqs):
        n = r.ByteSize()
        n += 1 + len(encode_varint(n))  # field 1 of RegisterTasksRequest: tag, length
        if limit and n > limit:
            err = InvalidRequestError(
                pb.STATUS_INVALID_REQUEST,
                f"the request is {n + _ENVELOPE_ROOM} bytes; the server takes frames of at most {frame} bytes",
                "payload",
            )
            results[i] = ScheduleResult(None, False, err)
            continue
        if len(part) == MAX_BATCH or (limit and size + n > limit):
            yield part
            part, size = [], 0
        part.append(i)
        size += n
    if part:
        yield part


def _result_of(r: pb.RegisterTaskResult) -> ScheduleResult:
    which = r.WhichOneof("result")
    if which == "error":
        return ScheduleResult(None, False, error_from_wire(r.error))
    if which == "registered" and r.registered.HasField("task"):
        return ScheduleResult(r.registered.task, r.registered.created, None)
    return ScheduleResult(None, False, ProtocolError("a task's result has neither a task nor an error"))


def _millis(value: float | timedelta) -> int:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    return round(seconds * 1000)
