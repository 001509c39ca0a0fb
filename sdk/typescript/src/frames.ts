import { fromBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { sizeDelimitedPeek } from "@bufbuild/protobuf/wire";

/**
 * The largest frame limit: a length prefix of five bytes or more is at
 * least 2^28, and the peek helper reads lengths as 32-bit numbers.
 */
export const maxFrameLimit = 2 ** 28 - 1;

/** Why a byte stream is not valid frames. */
export type FrameErrorKind = "truncated" | "too_large" | "bad_length" | "undecodable";

/**
 * FrameError: a byte stream that is not valid frames. The connection it
 * came from is unusable.
 */
export class FrameError extends Error {
  readonly kind: FrameErrorKind;

  constructor(kind: FrameErrorKind, message: string) {
    super(`broken frame: ${message}`);
    this.name = "FrameError";
    this.kind = kind;
  }
}

/**
 * FrameDecoder turns the chunks a socket delivers into messages: each frame
 * is a message's length as a varint, then the message (the size-delimited
 * format of @bufbuild/protobuf). Frames may span chunks and chunks may hold
 * many frames.
 */
export class FrameDecoder<Desc extends DescMessage> {
  readonly #schema: Desc;
  readonly #maxBytes: number;
  #buffer: Uint8Array = new Uint8Array(0);

  /** maxBytes bounds one frame's message; at most maxFrameLimit. */
  constructor(schema: Desc, maxBytes: number) {
    this.#schema = schema;
    this.#maxBytes = Math.min(maxBytes, maxFrameLimit);
  }

  /**
   * Adds a chunk and calls emit with each message it completes, in order.
   * Throws FrameError when the stream breaks, after emitting the messages
   * before the broken frame.
   */
  push(chunk: Uint8Array, emit: (message: MessageShape<Desc>) => void): void {
    // A plain view of the chunk, so bytes fields are Uint8Arrays, not Buffers.
    const plain = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const data = this.#buffer.length === 0 ? plain : concat(this.#buffer, plain);
    let offset = 0;
    try {
      for (;;) {
        const rest = data.subarray(offset);
        const end = this.#frameEnd(rest);
        if (end === undefined) {
          break;
        }
        const [start, stop] = end;
        let message: MessageShape<Desc>;
        try {
          message = fromBinary(this.#schema, rest.subarray(start, stop));
        } catch (err) {
          throw new FrameError("undecodable", `message does not decode: ${err instanceof Error ? err.message : String(err)}`);
        }
        offset += stop;
        emit(message);
      }
    } finally {
      // Keep only the unfinished tail, copied so the chunk can be freed.
      this.#buffer = offset === data.length ? new Uint8Array(0) : data.slice(offset);
    }
  }

  /** Where the next frame's message starts and ends, if it is all there. */
  #frameEnd(rest: Uint8Array): [number, number] | undefined {
    let head: ReturnType<typeof sizeDelimitedPeek>;
    try {
      head = sizeDelimitedPeek(rest);
    } catch {
      throw new FrameError("bad_length", "length prefix longer than ten bytes");
    }
    if (head.eof) {
      return undefined;
    }
    if (head.offset > 4 || head.size > this.#maxBytes) {
      const size = head.offset > 4 ? "more than 2^28" : String(head.size);
      throw new FrameError("too_large", `frame of ${size} bytes exceeds the limit of ${this.#maxBytes}`);
    }
    const stop = head.offset + head.size;
    return rest.length < stop ? undefined : [head.offset, stop];
  }

  /** Throws FrameError if the stream ended inside a frame. */
  end(): void {
    if (this.#buffer.length > 0) {
      throw new FrameError("truncated", "stream ended inside a frame");
    }
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
