"""The raw TCP client against the real server."""

from __future__ import annotations

import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import boomerang
from boomerang import pb

from .harness import (
    ADMIN_PASSWORD,
    SECRET,
    WAIT_LIMIT,
    Inbox,
    Proxy,
    admin,
    connect,
    start_server,
    wait_for,
    webhook_server,
)


class EveryOperationTest(unittest.TestCase):
    def test_every_operation(self) -> None:
        s = start_server(self)
        inbox = Inbox()
        url = webhook_server(self, inbox)
        adm = admin(self, s)
        self.assertTrue(adm.session and adm.session.admin, "the bootstrap admin's session is an admin's")

        info = adm.get_server_info()
        self.assertTrue(
            info.tcp_address and info.max_payload_bytes > 0 and info.max_frame_bytes > info.max_payload_bytes
        )

        for cid in ("alice", "bob"):
            r = adm.register_client(
                client_id=cid,
                password=f"{cid}-password",
                callback=pb.Callback(protocol=pb.PROTOCOL_HTTP, endpoint=url, timeout_ms=5000),
                retry=pb.RetryPolicy(
                    backoff=pb.BACKOFF_FIXED, initial_interval_ms=10, max_interval_ms=10, max_attempts=1
                ),
                default_mode=pb.DISPATCH_MODE_BLOCK_ON_ERROR,
                signing_secret=SECRET,
            )
            self.assertEqual(r.client.id, cid)
            self.assertEqual(r.signing_secret, SECRET)
        self.assertEqual(sorted(c.id for c in adm.list_clients().clients), ["admin", "alice", "bob"])

        alice = connect(self, s, "alice", "alice-password")
        bob = connect(self, s, "bob", "bob-password")

        # Deliver now: the payload comes back to the webhook, signed.
        now = alice.schedule("hello")
        got = inbox.next("hello", lambda d: d.task_id == now.id)
        self.assertEqual((got.payload, got.client, got.attempt), (b"hello", "alice", 1))

        # Many tasks at once: each answered on its own, in order, without payloads.
        batch = alice.register_tasks(
            tasks=[
                pb.RegisterTaskRequest(payload=b"\x01", delay_ms=3_600_000, group="batch"),
                pb.RegisterTaskRequest(payload=b"\x02", delay_ms=-1),
            ]
        )
        self.assertEqual([r.WhichOneof("result") for r in batch.results], ["registered", "error"])
        self.assertEqual(batch.results[0].registered.task.group, "batch")
        self.assertEqual(batch.results[0].registered.task.payload, b"")
        self.assertEqual(batch.results[1].error.field, "delay_ms")
        alice.cancel_tasks(group="batch")

        # A task's life: register, get, update, list, cancel.
        reg = alice.register_task(payload=b"\x00\xff\x01", delay_ms=3_600_000, group="g/1", idempotency_key="k1")
        self.assertTrue(reg.created)
        tid = reg.task.id
        again = alice.register_task(
            pb.RegisterTaskRequest(payload=b"\x09", delay_ms=1, group="g/1", idempotency_key="k1")
        )
        self.assertFalse(again.created, "the idempotency key returns the existing task")
        self.assertEqual(again.task.id, tid)
        self.assertEqual(alice.get_task(id=tid).task.payload, b"\x00\xff\x01")
        due = int(time.time() * 1000) + 7_200_000
        upd = alice.update_task(id=tid, payload=b"", fire_at_ms=due, repeat_interval_ms=60_000)
        self.assertEqual((upd.task.fire_at_ms, upd.task.repeat_interval_ms, upd.task.payload), (due, 60_000, b""))
        self.assertEqual([t.id for t in alice.list_tasks(group="g/1").tasks], [tid])
        self.assertIn(tid, [t.id for t in alice.tasks(page_size=1)], "tasks() pages through every task")
        alice.cancel(tid)
        with self.assertRaises(boomerang.NotFoundError):
            alice.get_task(id=tid)

        # Dead letters: bob's "fail:" tasks are refused and have one attempt.
        failing = bob.schedule("fail:one")

        def dead_letter_of(task_id: int) -> pb.DeadLetter | None:
            return next((d for d in bob.list_dead_letters().dead_letters if d.task.id == task_id), None)

        wait_for("the dead letter", lambda: dead_letter_of(failing.id) is not None)
        dl = dead_letter_of(failing.id)
        assert dl is not None
        got1 = bob.get_dead_letter(id=dl.id).dead_letter
        # The server keeps the status of a refused webhook, never its body.
        self.assertEqual(got1.last_error, "delivery: HTTP 500 Internal Server Error")
        self.assertFalse(got1.blocks_group)
        replayed = bob.replay_dead_letter(id=dl.id).task
        self.assertNotEqual(replayed.id, failing.id)
        inbox.next("the replay", lambda d: d.task_id == replayed.id)
        with self.assertRaises(boomerang.NotFoundError, msg="a replayed dead letter leaves the queue"):
            bob.get_dead_letter(id=dl.id)
        wait_for("the replay's dead letter", lambda: dead_letter_of(replayed.id) is not None)
        letters = [d.id for d in bob.dead_letters(page_size=1)]
        self.assertEqual(len(letters), 1, "dead_letters() pages through the dead letters")
        bob.delete_dead_letter(id=letters[0])
        with self.assertRaises(boomerang.NotFoundError):
            bob.get_dead_letter(id=letters[0])

        # A blocked group: unblock delivers the head again, skip moves past it.
        head = bob.schedule("fail:head", group="blk", mode=pb.DISPATCH_MODE_BLOCK_ON_ERROR)
        wait_for("the group to block", lambda: bob.get_group(group="blk").group.blocked)
        behind = bob.schedule("after the head", group="blk")
        blocked = bob.get_group(group="blk").group
        unblocked = bob.unblock_group(group="blk")
        self.assertTrue(unblocked.task.payload)

        def blocked_again() -> bool:
            g = bob.get_group(group="blk").group
            return g.blocked and g.blocked_dead_letter_id != blocked.blocked_dead_letter_id

        wait_for("the group to block again", blocked_again)
        bob.skip_group(group="blk")
        inbox.next("the task behind the skipped head", lambda d: d.task_id == behind.id)
        self.assertTrue(any(d.task_id == head.id for d in inbox.deliveries))
        with self.assertRaises(boomerang.ConflictError, msg="skipping a group that is not blocked"):
            bob.skip_group(group="blk")

        # Bulk cleanup: count, then cancel a group's tasks; purge dead letters.
        for _ in range(3):
            bob.schedule("bulk", group="bulk", after=3600)
        dry = bob.cancel_tasks(group="bulk", dry_run=True)
        self.assertEqual((dry.matched, dry.cancelled), (3, 0))
        self.assertEqual(bob.cancel_tasks(group="bulk").cancelled, 3)
        self.assertEqual(bob.purge_dead_letters(error_contains="no such error").deleted, 0)

        # Ownership: bob cannot see alice's tasks; a non-admin cannot list clients.
        mine = alice.schedule("alice's", after=3600)
        with self.assertRaises(boomerang.NotFoundError):
            bob.get_task(id=mine.id)
        with self.assertRaises(boomerang.UnauthorizedError):
            bob.list_clients()
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            alice.schedule("x", after=-0.001)
        self.assertEqual(cm.exception.field, "delay_ms")

        # A refreshed session replaces the old one.
        old = alice.session
        assert old is not None
        ref = alice.refresh_session()
        self.assertNotEqual(ref.session_id, old.id)
        self.assertEqual(alice.session and alice.session.id, ref.session_id)
        alice.list_tasks()

        # Deregistering: refused while the client has tasks, then allowed.
        with self.assertRaises(boomerang.ConflictError):
            adm.deregister_client(client_id="alice")
        for t in list(alice.tasks()):
            alice.cancel_task(id=t.id)
        adm.deregister_client(client_id="alice")
        with self.assertRaises(boomerang.UnauthorizedError):
            alice.list_tasks()
        with self.assertRaises(boomerang.NotFoundError):
            adm.deregister_client(client_id="alice")
        self.assertEqual(s.stop(), 0, "boomerang exits cleanly on SIGTERM")


class ClientTest(unittest.TestCase):
    def test_pipelined_requests_are_matched_to_their_responses(self) -> None:
        s = start_server(self)
        c = admin(self, s)
        n = 500
        futures = [
            c.submit(
                "register_task", pb.RegisterTaskRequest(payload=b"task %d" % i, delay_ms=3_600_000, group=f"g{i % 7}")
            )
            for i in range(n)
        ]
        tasks = [f.result(WAIT_LIMIT).task for f in futures]
        self.assertEqual([t.payload for t in tasks], [b"task %d" % i for i in range(n)])
        self.assertEqual(len({t.id for t in tasks}), n)

        # Reads and cancels interleaved, all in flight together.
        kept = tasks[100:]
        reads = [c.submit("get_task", pb.GetTaskRequest(id=t.id)) for t in kept]
        cancels = [c.submit("cancel_task", pb.CancelTaskRequest(id=t.id)) for t in tasks[:100]]
        self.assertEqual([f.result(WAIT_LIMIT).task.id for f in reads], [t.id for t in kept])
        for f in cancels:
            f.result(WAIT_LIMIT)

        # Blocking calls from many threads share the connection too; a small
        # in-flight limit makes calls wait for a slot, not fail.
        narrow = admin(self, s, max_in_flight=2)
        with ThreadPoolExecutor(8) as pool:
            infos = list(pool.map(lambda _: narrow.get_server_info(timeout=WAIT_LIMIT), range(50)))
        self.assertEqual(len(infos), 50)

    def test_a_cron_task_is_due_at_its_first_occurrence_and_shows_the_next_ones(self) -> None:
        s = start_server(self)
        c = admin(self, s)
        task = c.schedule("report", cron="0 9 * * MON-FRI", time_zone="Europe/Zurich")
        self.assertEqual((task.cron, task.time_zone), ("0 9 * * MON-FRI", "Europe/Zurich"))
        # 09:00 in Zurich is 08:00 or, in summer, 07:00 UTC.
        self.assertIn(task.fire_at_ms % 86_400_000, (8 * 3_600_000, 7 * 3_600_000))
        got = c.get_task(id=task.id).task
        self.assertEqual(len(got.next_fire_at_ms), 5)
        self.assertGreater(got.next_fire_at_ms[0], task.fire_at_ms)
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            c.schedule("x", cron="0 9 * * *", time_zone="Nowhere/Land")
        self.assertEqual(cm.exception.field, "time_zone")

    def test_a_registration_with_a_replace_key_replaces_the_waiting_task(self) -> None:
        s = start_server(self)
        c = admin(self, s)
        first = c.schedule("v1", replace_key="reindex", debounce=3600, max_wait=7200)
        self.assertEqual(first.replace_key, "reindex")
        resp = c.register_task(payload=b"v2", replace_key="reindex", debounce_ms=3_600_000)
        self.assertTrue(resp.replaced)
        self.assertFalse(resp.created)
        self.assertEqual((resp.task.id, resp.task.payload), (first.id, b"v2"))

    def test_a_clients_groups_take_rate_limits(self) -> None:
        s = start_server(self)
        c = admin(self, s)
        registered = c.register_client(
            client_id="limited",
            password="limited-password",
            callback=pb.Callback(protocol=pb.PROTOCOL_UDP, endpoint="127.0.0.1:9"),
            group_rate_limit=pb.RateLimit(max_deliveries=10, interval_ms=1000),
            group_rate_limits={"reports": pb.RateLimit(max_deliveries=1, interval_ms=60_000)},
        )
        self.assertEqual(registered.client.group_rate_limit.max_deliveries, 10)
        self.assertEqual(registered.client.group_rate_limits["reports"].interval_ms, 60_000)
        c.register_tasks(client="limited", tasks=[pb.RegisterTaskRequest(group="reports", delay_ms=3_600_000)])
        self.assertEqual(c.get_group(client="limited", group="reports").group.rate_limit.max_deliveries, 1)

    def test_errors_carry_the_server_status_message_and_field(self) -> None:
        s = start_server(self, args=("--max-payload-bytes", "1024", "--max-frame-bytes", "8192"))
        c = admin(self, s)
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            c.register_task(payload=b"x", delay_ms=-5)
        err = cm.exception
        self.assertEqual((err.status, err.field), (pb.STATUS_INVALID_REQUEST, "delay_ms"))
        self.assertIn("got -5", err.server_message)
        self.assertEqual(boomerang.status_of(err), pb.STATUS_INVALID_REQUEST)
        # Over the payload limit: the server refuses it. Over the frame
        # limit: refused before sending, since the server would drop the
        # connection.
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            c.schedule(bytes(2000))
        self.assertEqual(cm.exception.field, "payload")
        self.assertIn("1024", cm.exception.server_message)
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            c.schedule(bytes(9000))
        self.assertEqual(cm.exception.field, "payload")
        self.assertIn("8192", cm.exception.server_message)
        c.get_server_info()  # the connection survived

        with self.assertRaises(boomerang.UnauthorizedError):
            boomerang.dial(s.tcp, ("admin", "wrong password"), timeout=WAIT_LIMIT)
        self.assertEqual(boomerang.status_of(None), pb.STATUS_OK)
        self.assertEqual(boomerang.status_of(ValueError("x")), pb.STATUS_UNSPECIFIED)
        with self.assertRaises(TypeError):
            c.get_task(pb.GetTaskRequest(id=1), id=2)
        with self.assertRaises(TypeError):
            c.call("get_task", pb.CancelTaskRequest(id=1))

        c.close()
        with self.assertRaises(boomerang.ClientClosedError):
            c.get_server_info()

    def test_schedule_batch_cuts_tasks_into_requests_within_the_limits(self) -> None:
        s = start_server(self, args=("--max-payload-bytes", "1024", "--max-frame-bytes", "8192"))
        c = admin(self, s)
        tasks = [boomerang.BatchTask(f"task {i}", after=3600, group=f"g{i % 5}") for i in range(1500)]
        # Tasks of 1000 bytes: a few per frame; one over the payload limit
        # (refused by the server), one over the frame limit (refused here).
        tasks += [boomerang.BatchTask(bytes(1000), after=3600, group="big") for _ in range(30)]
        tasks += [boomerang.BatchTask(bytes(2000), group="big"), boomerang.BatchTask(bytes(9000), group="big")]
        tasks.append(boomerang.BatchTask("bad", every=-1))
        results = c.schedule_batch(tasks, timeout=WAIT_LIMIT)
        self.assertEqual(len(results), len(tasks))
        last_seq: dict[str, int] = {}
        for i, r in enumerate(results[:1530]):
            self.assertIsNone(r.error, f"task {i}")
            assert r.task is not None
            self.assertTrue(r.created)
            self.assertEqual(r.task.payload, b"", "results carry no payload")
            self.assertGreater(r.task.seq, last_seq.get(r.task.group, 0), "a group's tasks keep their order")
            last_seq[r.task.group] = r.task.seq
        over_payload, over_frame, bad = results[1530:]
        self.assertIsInstance(over_payload.error, boomerang.InvalidRequestError)
        self.assertIn("1024", str(over_payload.error))
        self.assertIsInstance(over_frame.error, boomerang.InvalidRequestError)
        self.assertIn("8192", str(over_frame.error))
        self.assertIsInstance(bad.error, boomerang.InvalidRequestError)
        self.assertEqual(getattr(bad.error, "field", ""), "repeat_interval_ms")
        self.assertEqual(sum(1 for t in c.tasks(group="big") if len(t.payload) == 1000), 30)

        # The operation itself: over the batch limit fails as a whole.
        with self.assertRaises(boomerang.InvalidRequestError) as cm:
            c.register_tasks(tasks=[pb.RegisterTaskRequest(payload=b"x")] * 1001)
        self.assertEqual(cm.exception.field, "tasks")
        # A whole request's error is each task's.
        c.close()
        closed = c.schedule_batch([boomerang.BatchTask("x"), boomerang.BatchTask("y")])
        self.assertTrue(all(isinstance(r.error, boomerang.ClientClosedError) for r in closed))

    def test_a_call_times_out_while_the_server_is_unreachable(self) -> None:
        s = start_server(self)
        proxy = Proxy(self, s.tcp)
        c = connect(self, proxy.address, "admin", ADMIN_PASSWORD)
        proxy.swallow()
        with self.assertRaises(TimeoutError):
            c.get_server_info(timeout=0.2)
        proxy.resume()
        self.assertGreater(c.get_server_info(timeout=WAIT_LIMIT).max_frame_bytes, 0, "the connection still works")

    def test_the_session_is_refreshed_before_it_expires_and_renewed_when_refused(self) -> None:
        s = start_server(self, args=("--session-ttl", "2s"))
        c = admin(self, s)
        assert c.session is not None
        first = c.session
        wait_for("the session to be refreshed", lambda: c.session is not None and c.session.id != first.id)
        assert c.session is not None
        self.assertGreater(c.session.expires_at.timestamp(), time.time())
        c.get_server_info()

        # The replaced session is refused; a client holding only it fails,
        # one with credentials logs in again by itself.
        stale = boomerang.Session(first.id, first.expires_at, True)
        with self.assertRaises(boomerang.SessionExpiredError):
            boomerang.dial(s.tcp, session=stale, timeout=WAIT_LIMIT)
        renewing = boomerang.dial(s.tcp, ("admin", ADMIN_PASSWORD), session=stale, timeout=WAIT_LIMIT)
        self.addCleanup(renewing.close)
        assert renewing.session is not None
        self.assertNotEqual(renewing.session.id, first.id)
        renewing.list_clients()

    def test_a_call_in_flight_when_the_connection_breaks_fails_and_the_client_reconnects(self) -> None:
        s = start_server(self)
        proxy = Proxy(self, s.tcp)
        c = connect(self, proxy.address, "admin", ADMIN_PASSWORD, reconnect_min=0.01, reconnect_max=0.05)
        swallowed = proxy.swallow()
        lost = c.submit("get_server_info")
        self.assertTrue(swallowed.wait(WAIT_LIMIT))
        proxy.cut()
        with self.assertRaises(boomerang.ConnectionLostError) as cm:
            lost.result(WAIT_LIMIT)
        self.assertEqual(boomerang.status_of(cm.exception), pb.STATUS_UNSPECIFIED)
        self.assertGreater(c.get_server_info(timeout=WAIT_LIMIT).max_frame_bytes, 0)

    def test_the_client_carries_on_after_the_server_restarts(self) -> None:
        first = start_server(self)
        c = admin(self, first, reconnect_min=0.02, reconnect_max=0.2)
        task = c.schedule("survives", after=3600, idempotency_key="restart")
        session = c.session
        self.assertEqual(first.stop(), 0)

        # Calls made while the server is down wait for it.
        waiting = c.submit("get_task", pb.GetTaskRequest(id=task.id))
        second = start_server(self, data_dir=first.data_dir, tcp_port=first.tcp_port)
        self.assertEqual(waiting.result(WAIT_LIMIT).task.payload, b"survives")
        # Sessions are stored like clients: the client's survived.
        again = c.register_task(payload=b"\x01", delay_ms=1000, idempotency_key="restart")
        self.assertFalse(again.created)
        self.assertEqual(again.task.id, task.id)
        self.assertEqual(c.session, session, "the client logged in again")

        # Calls refused together after a restart and a revocation all
        # succeed on a new login.
        self.assertEqual(second.stop(), 0)
        third = start_server(self, data_dir=first.data_dir, tcp_port=first.tcp_port)
        wait_for("the reconnection", lambda: _answers(c))
        admin(self, third).call("revoke_sessions", pb.RevokeSessionsRequest(), timeout=WAIT_LIMIT)
        before = c.session
        futures = [c.submit("get_task", pb.GetTaskRequest(id=task.id)) for _ in range(50)]
        self.assertEqual({f.result(WAIT_LIMIT).task.id for f in futures}, {task.id})
        self.assertNotEqual(c.session, before, "the client logged in again")

    def test_the_server_error_frame_is_the_cause_of_a_lost_connection(self) -> None:
        s = start_server(self, args=("--idle-timeout", "300ms"))
        proxy = Proxy(self, s.tcp)
        c = connect(self, proxy.address, "admin", ADMIN_PASSWORD, reconnect_min=0.01, reconnect_max=0.05)
        # The server never sees this request, so it finds the connection
        # idle, says so in an error frame and closes it.
        proxy.swallow()
        lost = c.submit("get_server_info")
        with self.assertRaises(boomerang.ConnectionLostError) as cm:
            lost.result(WAIT_LIMIT)
        self.assertEqual(boomerang.status_of(cm.exception), pb.STATUS_INVALID_REQUEST)
        self.assertIn("timed out", str(cm.exception))


def _answers(c: boomerang.Client) -> bool:
    """Whether the server answers, even if only to refuse the session."""
    try:
        c.call("login", pb.LoginRequest(), timeout=WAIT_LIMIT)
    except boomerang.BoomerangError:
        return True
    except boomerang.ConnectionLostError:
        return False
    return True


if __name__ == "__main__":
    unittest.main()
