"""Checks the SDK against the shared vectors in testdata/conformance (see
the README there), so it stays byte-compatible with the Go code."""

from __future__ import annotations

import json
import re
import unittest
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import Message

import boomerang
from boomerang import pb
from boomerang._shard import shard_of_id, shard_of_task

from .harness import REPO_ROOT

VECTORS = REPO_ROOT / "testdata" / "conformance"

TYPES: dict[str, type[Message]] = {
    "boomerang.v1.Request": pb.Request,
    "boomerang.v1.Response": pb.Response,
    "boomerang.v1.Delivery": pb.Delivery,
    "boomerang.v1.Ack": pb.Ack,
}


def load(name: str) -> Any:
    with open(VECTORS / name, encoding="utf-8") as f:
        return json.load(f)


def parse(type_name: str, value: dict[str, Any]) -> Message:
    return json_format.ParseDict(value, TYPES[type_name]())


class MessagesTest(unittest.TestCase):
    def check_message(self, v: dict[str, Any]) -> None:
        name, cls = v["name"], TYPES[v["type"]]
        from_json = parse(v["type"], v["json"])
        from_hex = cls.FromString(bytes.fromhex(v["hex"]))
        self.assertEqual(from_hex, from_json, f"{name}: hex and json hold different messages")
        # Field order may differ from Go's (see the README); content and size may not.
        encoded = from_json.SerializeToString()
        self.assertEqual(cls.FromString(encoded), from_json, f"{name}: encoding round trip")
        self.assertEqual(len(encoded), len(v["hex"]) // 2, f"{name}: encoded size")
        frame = boomerang.encode_frame(from_json)
        prefix_hex = v["frame_hex"][: len(v["frame_hex"]) - len(v["hex"])]
        self.assertEqual(frame[: len(frame) - len(encoded)].hex(), prefix_hex, f"{name}: length prefix")
        decoder = boomerang.FrameDecoder(cls, 1 << 20)
        out = list(decoder.feed(bytes.fromhex(v["frame_hex"])))
        decoder.end()
        self.assertEqual(out, [from_json], f"{name}: framed message")

    def test_envelopes_a_request_and_a_response_per_operation(self) -> None:
        f = load("envelopes.json")
        for v in f["requests"] + f["responses"]:
            with self.subTest(v["name"]):
                self.check_message(v)
        # Every operation of the generated code has vectors, and every vector
        # names an operation the generated code knows: generated code that
        # lags behind the .proto fails here.
        operations = [field.name for field in pb.Request.DESCRIPTOR.oneofs_by_name["body"].fields]
        for kind in ("requests", "responses"):
            names = {v["name"].split("/")[0] for v in f[kind]} - {"error"}
            self.assertEqual(names, set(operations), kind)

    def test_callbacks_delivery_and_ack_frames(self) -> None:
        f = load("callbacks.json")
        for v in f["deliveries"] + f["acks"]:
            with self.subTest(v["name"]):
                self.check_message(v)


class FramesTest(unittest.TestCase):
    def test_streams_in_any_split(self) -> None:
        for s in load("frames.json")["streams"]:
            stream = bytes.fromhex(s["stream_hex"])
            want = [parse(s["type"], m) for m in s["messages"]]
            # Whole, byte by byte, and in chunks of 7.
            for size in (len(stream), 1, 7):
                with self.subTest(s["name"], chunk=size):
                    decoder = boomerang.FrameDecoder(TYPES[s["type"]], 1 << 20)
                    out: list[Message] = []
                    for i in range(0, len(stream), size):
                        out += decoder.feed(stream[i : i + size])
                    decoder.end()
                    self.assertEqual(out, want)

    def test_broken_streams_are_refused(self) -> None:
        for b in load("frames.json")["broken"]:
            with self.subTest(b["name"]):
                decoder = boomerang.FrameDecoder(TYPES[b["type"]], b["max_bytes"])
                with self.assertRaises(boomerang.FrameError) as cm:
                    list(decoder.feed(bytes.fromhex(b["stream_hex"])))
                    decoder.end()
                self.assertEqual(cm.exception.kind, b["error"])

    def test_varints(self) -> None:
        self.assertEqual(boomerang.encode_varint(0), b"\x00")
        self.assertEqual(boomerang.encode_varint(300), b"\xac\x02")
        self.assertEqual(boomerang.encode_varint(2**64 - 1), b"\xff" * 9 + b"\x01")
        with self.assertRaises(ValueError):
            boomerang.encode_varint(2**64)


VERDICTS: dict[str, type[Exception]] = {
    "no_signature": boomerang.NoSignatureError,
    "bad_signature": boomerang.BadSignatureError,
    "stale": boomerang.StaleSignatureError,
    "bad_header": boomerang.BadHeaderError,
}

SIGNED = (
    "Boomerang-Timestamp",
    "Boomerang-Task-Id",
    "Boomerang-Attempt",
    "Boomerang-Fire-At",
    "Boomerang-Client",
    "Boomerang-Group",
    "Boomerang-Term",
)


class WebhooksTest(unittest.TestCase):
    def test_signatures(self) -> None:
        for s in load("webhooks.json")["signatures"]:
            with self.subTest(s["name"]):
                meta = boomerang.WebhookMeta(
                    delivery_id=int(s["delivery_id"]),
                    task_id=int(s["task_id"]),
                    attempt=s["attempt"],
                    fire_at_ms=int(s["fire_at_ms"]),
                    client=s["client"],
                    group=s["group"],
                    term=int(s["term"]),
                    timestamp=s["timestamp"],
                )
                body = bytes.fromhex(s["body_hex"])
                self.assertEqual(boomerang.sign_webhook(bytes.fromhex(s["secret_hex"]), meta, body), s["headers"])
                fields = [s["headers"][n] for n in SIGNED]
                self.assertEqual(boomerang.signed_bytes(fields, body).hex(), s["signed_hex"])

    def test_verifications(self) -> None:
        for v in load("webhooks.json")["verifications"]:
            secret, body = bytes.fromhex(v["secret_hex"]), bytes.fromhex(v["body_hex"])
            # Headers arrive in many shapes: names in any case, and (name,
            # value) byte pairs as ASGI gives them.
            shapes = {
                "canonical": v["headers"],
                "lower": {k.lower(): x for k, x in v["headers"].items()},
                "asgi": [(k.lower().encode(), x.encode()) for k, x in v["headers"].items()],
            }
            for shape, headers in shapes.items():
                with self.subTest(v["name"], headers=shape):
                    verify = lambda: boomerang.verify_webhook(  # noqa: E731
                        secret, headers, body, now=v["now"], tolerance=v["tolerance_seconds"]
                    )
                    if v["result"] != "ok":
                        with self.assertRaises(VERDICTS[v["result"]]):
                            verify()
                        continue
                    d, want = verify(), v["delivery"]
                    self.assertEqual(
                        (
                            d.delivery_id,
                            d.task_id,
                            d.attempt,
                            d.fire_at_ms,
                            d.client,
                            d.group,
                            d.term,
                            d.sent_ms,
                            d.payload,
                        ),
                        (
                            int(want["delivery_id"]),
                            int(want["task_id"]),
                            want["attempt"],
                            int(want["fire_at_ms"]),
                            want["client"],
                            want["group"],
                            int(want["term"]),
                            want["timestamp"] * 1000,
                            body,
                        ),
                    )

    def test_name_escaping(self) -> None:
        f = load("webhooks.json")
        for e in f["escapes"]:
            self.assertEqual(boomerang.escape_name(e["raw"]), e["escaped"])
            self.assertEqual(boomerang.unescape_name(e["escaped"]), e["raw"])
            lower_hex = re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), e["escaped"])
            self.assertEqual(boomerang.unescape_name(lower_hex), e["raw"], "either case decodes")
        for bad in f["unescape_invalid"]:
            with self.assertRaises(ValueError, msg=bad):
                boomerang.unescape_name(bad)


class FencesTest(unittest.TestCase):
    def test_keys(self) -> None:
        for k in load("fences.json")["keys"]:
            d = json_format.ParseDict(k["delivery"], pb.Delivery())
            self.assertEqual(boomerang.fence_key(d), k["key"], k["name"])

    def test_admit_sequences(self) -> None:
        for s in load("fences.json")["sequences"]:
            with self.subTest(s["name"]):
                fence = boomerang.Fence(s["capacity"])
                got = [fence.admit(step["key"], int(step["term"])) for step in s["steps"]]
                self.assertEqual(got, [step["admitted"] for step in s["steps"]])
                self.assertEqual(fence.stale, s["stale"])


class ShardsTest(unittest.TestCase):
    def test_tasks(self) -> None:
        for v in load("shards.json")["tasks"]:
            with self.subTest(v["name"]):
                got = shard_of_task(
                    v["shards"], v["client"], v.get("group", ""), v.get("idempotency_key", ""), v.get("replace_key", "")
                )
                self.assertEqual(got is not None, v["placed"])
                self.assertEqual(got or 0, v["shard"])

    def test_ids(self) -> None:
        for v in load("shards.json")["ids"]:
            self.assertEqual(shard_of_id(int(v["task_id"])), v["shard"], v["task_id"])


class ErrorsTest(unittest.TestCase):
    def test_every_error_response_becomes_its_class(self) -> None:
        classes = {
            "invalid_request": boomerang.InvalidRequestError,
            "unauthorized": boomerang.UnauthorizedError,
            "session_expired": boomerang.SessionExpiredError,
            "not_found": boomerang.NotFoundError,
            "busy": boomerang.BusyError,
            "group_full": boomerang.GroupFullError,
            "conflict": boomerang.ConflictError,
            "internal": boomerang.InternalError,
        }
        for v in load("envelopes.json")["responses"]:
            status = v["name"].removeprefix("error/")
            if status not in classes:
                continue
            with self.subTest(v["name"]):
                wire = pb.Response.FromString(bytes.fromhex(v["hex"])).error
                err = boomerang.error_from_wire(wire)
                self.assertIsInstance(err, classes[status])
                self.assertEqual((err.status, err.server_message, err.field), (wire.status, wire.message, wire.field))
        self.assertIsInstance(
            boomerang.error_from_wire(pb.Error(status=cast(pb.Status, 99))), boomerang.UnknownStatusError
        )


if __name__ == "__main__":
    unittest.main()
