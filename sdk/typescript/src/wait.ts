/** A promise with its settle functions. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

/**
 * A promise to settle later. A rejection nobody waits for is not reported
 * as unhandled: waiters attach when they come.
 */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Waits for p, or rejects with the signal's reason when it aborts first;
 * onAbort then runs, to clean up.
 */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, onAbort?: () => void): Promise<T> {
  if (signal === undefined) {
    return p;
  }
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort?.();
      reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(err);
      },
    );
  });
}

/** Resolves after ms, or rejects with the signal's reason. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return abortable(done, signal, () => clearTimeout(timer));
}

/** A counting semaphore whose waiters may give up. */
export class Slots {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(n: number) {
    this.#free = n;
  }

  /** Takes a slot, waiting for one if none is free. */
  async acquire(signal: AbortSignal | undefined): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    let wake!: () => void;
    const turn = new Promise<void>((resolve) => (wake = resolve));
    this.#waiters.push(wake);
    await abortable(turn, signal, () => {
      const i = this.#waiters.indexOf(wake);
      if (i >= 0) {
        this.#waiters.splice(i, 1);
      } else {
        this.release(); // woken and aborted at once: pass the slot on
      }
    });
  }

  /** Returns a slot, handing it to the longest waiter if any. */
  release(): void {
    const next = this.#waiters.shift();
    if (next !== undefined) {
      next();
    } else {
      this.#free++;
    }
  }
}
