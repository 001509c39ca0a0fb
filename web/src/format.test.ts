import { describe, expect, it } from "vitest";
import { formatDuration, fromLocalInput, hexDump, payloadJSON, payloadText, toLocalInput } from "./format";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("payload views", () => {
  it("pretty-prints JSON and leaves other text alone", () => {
    expect(payloadJSON(bytes('{"a":1,"b":[2]}'))).toBe('{\n  "a": 1,\n  "b": [\n    2\n  ]\n}');
    expect(payloadJSON(bytes("plain words"))).toBeUndefined();
    expect(payloadJSON(bytes("  "))).toBeUndefined();
  });
  it("refuses invalid UTF-8 as text", () => {
    expect(payloadText(new Uint8Array([0xff, 0xfe]))).toBeUndefined();
    expect(payloadText(bytes("héllo"))).toBe("héllo");
  });
  it("dumps hex with offsets and printable characters", () => {
    const dump = hexDump(bytes("ABCDEFGHIJKLMNOPQ"));
    expect(dump.split("\n")).toEqual([
      "00000000  41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP",
      "00000010  51                                               Q",
    ]);
    expect(hexDump(new Uint8Array(40), 16)).toContain("… 24 more bytes");
  });
});

describe("times", () => {
  it("formats durations at a useful precision", () => {
    expect(formatDuration(0.25)).toBe("250 µs");
    expect(formatDuration(4.56)).toBe("4.6 ms");
    expect(formatDuration(1500)).toBe("1.5 s");
    expect(formatDuration(90_000)).toBe("1.5 min");
  });
  it("round-trips local date inputs to the second", () => {
    const t = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(fromLocalInput(toLocalInput(t))).toBe(t);
    expect(toLocalInput(0)).toBe("");
  });
});
