import { create, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { sizeDelimitedEncode } from "@bufbuild/protobuf/wire";
import {
  BoomerangService,
  LoginRequestSchema,
  RegisterTaskRequestSchema,
  Status,
  type DeadLetter,
  type DispatchMode,
  type CallbackSchema,
  type RetryPolicySchema,
  type Task,
} from "./gen/api/boomerang/v1/boomerang_pb.js";
import { BoomerangError, InvalidRequestError, errorFromWire, messageOf } from "./errors.js";

type Methods = typeof BoomerangService.method;

/** An operation of BoomerangService, named as in the TCP envelope's body. */
export type Operation = keyof Methods;
/** What an operation takes: a request message or a plain object of its fields. */
export type InputOf<K extends Operation> = MessageInitShape<Methods[K]["input"]>;
/** The request message of an operation. */
export type RequestOf<K extends Operation> = MessageShape<Methods[K]["input"]>;
/** What an operation returns. */
export type ResponseOf<K extends Operation> = MessageShape<Methods[K]["output"]>;

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call: waiting for a slot, a connection and the response. */
  signal?: AbortSignal;
  /** Gives up after this many milliseconds. */
  timeoutMs?: number;
}

/**
 * A registered client's id and password. With them a client logs in when it
 * starts and again whenever its session expires or the server forgets it
 * (after a restart).
 */
export interface Credentials {
  clientId: string;
  password: string;
}

/** A login session on the server. */
export interface Session {
  id: string;
  expiresAt: Date;
  admin: boolean;
}

/** Where a client reports connection changes and session refreshes. Console fits. */
export interface Logger {
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
}

const quiet: Logger = { info() {}, warn() {} };

/** The fields of a registration that schedule sets. */
export interface ScheduleOptions {
  /** Due this many milliseconds from now. Default: now. */
  after?: number;
  /** Due at this time (a Date or Unix milliseconds). */
  at?: Date | number;
  /** Repeats every this many milliseconds after the previous due time. */
  every?: number;
  /**
   * Repeats on a calendar schedule instead: five fields (minute hour
   * day-of-month month day-of-week) or six with seconds first, e.g.
   * "0 9 * * MON-FRI". The first occurrence is the first at or after the due time.
   */
  cron?: string;
  /** The IANA time zone cron is read in, e.g. "Europe/Zurich". Default: UTC. */
  timeZone?: string;
  /**
   * Replaces the client's waiting task with this key in the same group
   * (payload and due time; it keeps its id and place) instead of adding
   * one; once that task's attempt has started, a new one is added. The
   * registerTask response says which happened (replaced).
   */
  replaceKey?: string;
  /** With replaceKey: due this many milliseconds after the latest registration with the key, instead of after/at. */
  debounce?: number;
  /** With debounce: due no later than this many milliseconds after the registration that created the task. */
  maxWait?: number;
  /** A group's tasks are delivered one at a time, in due order. */
  group?: string;
  /** A repeated registration with the same key returns the existing task. */
  idempotencyKey?: string;
  /** The task's dispatch mode. Default: the client's. */
  mode?: DispatchMode;
  /** Overrides the client's callback for this task. */
  callback?: MessageInitShape<typeof CallbackSchema>;
  /** Overrides the client's retry policy for this task. */
  retry?: MessageInitShape<typeof RetryPolicySchema>;
}

/** The most tasks the server takes in one registerTasks request. */
export const maxBatch = 1000;

/** Room a registerTasks request needs beyond its tasks: request id, session id, framing. */
const envelopeRoom = 512;

/** One task of scheduleBatch: a payload and its schedule. */
export interface BatchTask {
  payload: Uint8Array | string;
  schedule?: ScheduleOptions;
}

/** One task's outcome in scheduleBatch. */
export interface ScheduleResult {
  /** The registered task, without its payload (the caller has it); undefined when error is set. */
  task?: Task;
  /** False when an idempotency key matched an earlier registration, whose task task is. */
  created: boolean;
  /**
   * Why the task was not registered: a BoomerangError the server gave for
   * this task or for its whole request, or a lost connection, an abort, a
   * closed client.
   */
  error?: unknown;
}

/** Refresh timing, as in the Go SDK. */
const refreshShare = 2 / 3;

/**
 * The operations of the service and the session handling shared by the TCP
 * and the Connect client. A subclass supplies send, which carries one
 * request with a session id and returns its response or throws.
 */
export abstract class BoomerangApi {
  protected readonly credentials: Credentials | undefined;
  protected readonly log: Logger;
  #session: Session | undefined;
  #obtained = 0;
  #lock: Promise<void> = Promise.resolve();
  #frameLimit: Promise<number> | undefined;

  protected constructor(credentials: Credentials | undefined, session: Session | undefined, logger: Logger | undefined) {
    this.credentials = credentials;
    this.log = logger ?? quiet;
    // Set without sessionChanged: subclasses are not constructed yet.
    this.#session = session;
    this.#obtained = Date.now();
  }

  /**
   * Sends one request with the session id and returns the operation's
   * response, or throws: a BoomerangError for a refused request, or the
   * transport's error.
   */
  protected abstract send<K extends Operation>(op: K, request: RequestOf<K>, sessionId: string, signal: AbortSignal | undefined): Promise<ResponseOf<K>>;

  /** Called whenever the session changes. */
  protected sessionChanged(): void {}

  /** Called before each call other than login and refresh. */
  protected async beforeCall(_signal: AbortSignal | undefined): Promise<void> {}

  /** The session in use; undefined before the first login. */
  get session(): Session | undefined {
    return this.#session;
  }

  #setSession(s: Session): void {
    this.#session = s;
    this.#obtained = Date.now();
    this.sessionChanged();
  }

  /** Runs an operation, renewing the session once if it is refused (see withSession). */
  protected async call<K extends Operation>(op: K, init: InputOf<K> | undefined, options: CallOptions | undefined): Promise<ResponseOf<K>> {
    const signal = callSignal(options);
    const request = create(BoomerangService.method[op].input, init) as RequestOf<K>;
    if (op === "login") {
      return this.#adopt(op, await this.send(op, request, "", signal));
    }
    if (op !== "refreshSession") {
      await this.beforeCall(signal);
    }
    return this.#adopt(op, await this.withSession(signal, (sessionId) => this.send(op, request, sessionId, signal)));
  }

  /**
   * Runs send with the session id. When the request is refused for its
   * session (expired, or unknown after a refresh or a server restart), it
   * is sent once more: with the current session if another call replaced
   * it meanwhile, else after logging in again when the client has
   * credentials.
   */
  protected async withSession<T>(signal: AbortSignal | undefined, send: (sessionId: string) => Promise<T>): Promise<T> {
    const stale = this.#session?.id ?? "";
    try {
      return await send(stale);
    } catch (err) {
      if (!sessionRefused(err) || !(await this.#renew(stale, signal))) {
        throw err;
      }
    }
    return send(this.#session?.id ?? "");
  }

  #adopt<K extends Operation>(op: K, response: ResponseOf<K>): ResponseOf<K> {
    const r = response as ResponseOf<"login"> | ResponseOf<"refreshSession">;
    if (op === "login" || op === "refreshSession") {
      this.#setSession({
        id: r.sessionId,
        expiresAt: new Date(Number(r.expiresAtMs)),
        admin: op === "login" ? (r as ResponseOf<"login">).admin : (this.#session?.admin ?? false),
      });
    }
    return response;
  }

  /** Runs f alone among logins and refreshes. */
  async #locked<T>(f: () => Promise<T>): Promise<T> {
    const previous = this.#lock;
    let release!: () => void;
    this.#lock = new Promise((resolve) => (release = resolve));
    await previous;
    try {
      return await f();
    } finally {
      release();
    }
  }

  /** Whether a request refused for session stale is worth sending again. */
  #renew(stale: string, signal: AbortSignal | undefined): Promise<boolean> {
    return this.#locked(async () => {
      if ((this.#session?.id ?? "") !== stale) {
        return true;
      }
      if (this.credentials === undefined) {
        return false;
      }
      try {
        await this.#login(signal);
        return true;
      } catch (err) {
        this.log.warn("boomerang: logging in again failed", { client: this.credentials.clientId, error: messageOf(err) });
        return false;
      }
    });
  }

  /** Logs in with the credentials unless a session exists or nobody has any. */
  protected async loginIfNeeded(signal: AbortSignal | undefined): Promise<void> {
    if (this.#session === undefined && this.credentials !== undefined) {
      await this.#locked(() => (this.#session === undefined ? this.#login(signal) : Promise.resolve()));
    }
  }

  async #login(signal: AbortSignal | undefined): Promise<void> {
    const creds = this.credentials!;
    const req = create(LoginRequestSchema, { clientId: creds.clientId, password: creds.password });
    this.#adopt("login", await this.send("login", req, "", signal));
  }

  /**
   * Milliseconds until the session should be refreshed (two thirds into
   * its life), or undefined when there is none.
   */
  protected refreshDue(now: number): number | undefined {
    const s = this.#session;
    if (s === undefined || s.id === "" || s.expiresAt.getTime() === 0) {
      return undefined;
    }
    const at = this.#obtained + (s.expiresAt.getTime() - this.#obtained) * refreshShare;
    return Math.max(at - now, 0);
  }

  /**
   * Replaces the session with a refreshed one, or with a new login when the
   * server no longer knows it.
   */
  protected refreshOnce(signal: AbortSignal | undefined): Promise<void> {
    return this.#locked(async () => {
      const req = create(BoomerangService.method.refreshSession.input, {});
      try {
        this.#adopt("refreshSession", await this.send("refreshSession", req, this.#session?.id ?? "", signal));
      } catch (err) {
        if (!sessionRefused(err) || this.credentials === undefined) {
          throw err;
        }
        await this.#login(signal);
      }
    });
  }

  // ---- The operations, one each ----

  /** Logs in and makes the new session the client's. */
  login(request: InputOf<"login">, options?: CallOptions): Promise<ResponseOf<"login">> {
    return this.call("login", request, options);
  }

  /** Replaces the session with a new one that expires later. */
  refreshSession(request?: InputOf<"refreshSession">, options?: CallOptions): Promise<ResponseOf<"refreshSession">> {
    return this.call("refreshSession", request, options);
  }

  /** Registers a client (admin only). The response carries its signing secret, shown only this once. */
  registerClient(request: InputOf<"registerClient">, options?: CallOptions): Promise<ResponseOf<"registerClient">> {
    return this.call("registerClient", request, options);
  }

  /** Removes a client (admin only). */
  deregisterClient(request: InputOf<"deregisterClient">, options?: CallOptions): Promise<ResponseOf<"deregisterClient">> {
    return this.call("deregisterClient", request, options);
  }

  /** Lists the registered clients (admin only). */
  listClients(request?: InputOf<"listClients">, options?: CallOptions): Promise<ResponseOf<"listClients">> {
    return this.call("listClients", request, options);
  }

  /** Schedules a task; answered once the task is durable. See schedule for a shorter form. */
  registerTask(request: InputOf<"registerTask">, options?: CallOptions): Promise<ResponseOf<"registerTask">> {
    return this.call("registerTask", request, options);
  }

  /**
   * Schedules up to maxBatch tasks in one request; each succeeds or fails on
   * its own, and the results come in the order of the tasks, without
   * payloads. The request must fit the server's frame limit. See
   * scheduleBatch, which splits any number of tasks into such requests.
   */
  registerTasks(request: InputOf<"registerTasks">, options?: CallOptions): Promise<ResponseOf<"registerTasks">> {
    return this.call("registerTasks", request, options);
  }

  /** Changes a task's payload, due time or repeat interval. */
  updateTask(request: InputOf<"updateTask">, options?: CallOptions): Promise<ResponseOf<"updateTask">> {
    return this.call("updateTask", request, options);
  }

  /** Deletes a task. A task whose delivery is under way answers ConflictError. */
  cancelTask(request: InputOf<"cancelTask">, options?: CallOptions): Promise<ResponseOf<"cancelTask">> {
    return this.call("cancelTask", request, options);
  }

  /** Returns one task. */
  getTask(request: InputOf<"getTask">, options?: CallOptions): Promise<ResponseOf<"getTask">> {
    return this.call("getTask", request, options);
  }

  /** Returns one page of tasks. See tasks for all pages. */
  listTasks(request?: InputOf<"listTasks">, options?: CallOptions): Promise<ResponseOf<"listTasks">> {
    return this.call("listTasks", request, options);
  }

  /** Returns one page of dead letters. See deadLetters for all pages. */
  listDeadLetters(request?: InputOf<"listDeadLetters">, options?: CallOptions): Promise<ResponseOf<"listDeadLetters">> {
    return this.call("listDeadLetters", request, options);
  }

  /** Returns one dead letter. */
  getDeadLetter(request: InputOf<"getDeadLetter">, options?: CallOptions): Promise<ResponseOf<"getDeadLetter">> {
    return this.call("getDeadLetter", request, options);
  }

  /** Schedules a dead letter's task again. */
  replayDeadLetter(request: InputOf<"replayDeadLetter">, options?: CallOptions): Promise<ResponseOf<"replayDeadLetter">> {
    return this.call("replayDeadLetter", request, options);
  }

  /** Deletes a dead letter. */
  deleteDeadLetter(request: InputOf<"deleteDeadLetter">, options?: CallOptions): Promise<ResponseOf<"deleteDeadLetter">> {
    return this.call("deleteDeadLetter", request, options);
  }

  /** Returns a group's state. */
  getGroup(request: InputOf<"getGroup">, options?: CallOptions): Promise<ResponseOf<"getGroup">> {
    return this.call("getGroup", request, options);
  }

  /** Delivers a blocked group's head again, then lets the group go on. */
  unblockGroup(request: InputOf<"unblockGroup">, options?: CallOptions): Promise<ResponseOf<"unblockGroup">> {
    return this.call("unblockGroup", request, options);
  }

  /** Leaves a blocked group's head in the dead letter queue and lets the group go on. */
  skipGroup(request: InputOf<"skipGroup">, options?: CallOptions): Promise<ResponseOf<"skipGroup">> {
    return this.call("skipGroup", request, options);
  }

  /** Cancels every task of a client, or of one of its groups, except those being delivered; dryRun only counts. */
  cancelTasks(request: InputOf<"cancelTasks">, options?: CallOptions): Promise<ResponseOf<"cancelTasks">> {
    return this.call("cancelTasks", request, options);
  }

  /** Deletes every dead letter matching a filter, except groups' blocked heads; dryRun only counts. */
  purgeDeadLetters(request: InputOf<"purgeDeadLetters">, options?: CallOptions): Promise<ResponseOf<"purgeDeadLetters">> {
    return this.call("purgeDeadLetters", request, options);
  }

  /** Returns the server's version, addresses and limits. */
  getServerInfo(request?: InputOf<"getServerInfo">, options?: CallOptions): Promise<ResponseOf<"getServerInfo">> {
    return this.call("getServerInfo", request, options);
  }

  // ---- Shorter forms of the common ones ----

  /**
   * Registers a task with payload (bytes, or a string sent as UTF-8), due
   * now unless after or at says otherwise, and returns it once durable.
   */
  async schedule(payload: Uint8Array | string, schedule: ScheduleOptions = {}, options?: CallOptions): Promise<Task> {
    const resp = await this.registerTask(registration(payload, schedule), options);
    if (resp.task === undefined) {
      throw new BoomerangError(Status.INTERNAL, "the registration returned no task");
    }
    return resp.task;
  }

  /**
   * Registers tasks and resolves to one result per task, in order; each
   * succeeds or fails on its own, as with schedule. The tasks go in
   * registerTasks requests of at most maxBatch tasks and the server's frame
   * limit, one after another, so a group's tasks keep their order; a task
   * too large for a frame alone fails with InvalidRequestError without
   * being sent. An error that fails a whole request is the error of each
   * of its tasks and of the later requests' tasks, which are not sent:
   * this never rejects.
   */
  async scheduleBatch(tasks: BatchTask[], options?: CallOptions): Promise<ScheduleResult[]> {
    const results: ScheduleResult[] = tasks.map(() => ({ created: false }));
    let frame = 0;
    try {
      frame = await this.frameLimit(callSignal(options));
    } catch (error) {
      return results.map(() => ({ created: false, error }));
    }
    const requests = tasks.map((t) => create(RegisterTaskRequestSchema, registration(t.payload, t.schedule)));
    const parts = split(requests, frame > envelopeRoom ? frame - envelopeRoom : 0, (i, size) => {
      results[i] = { created: false, error: new InvalidRequestError(Status.INVALID_REQUEST, `the request is ${size} bytes; the server takes frames of at most ${frame} bytes`, "payload") };
    });
    let failed: { error: unknown } | undefined;
    for (const part of parts) {
      try {
        if (failed !== undefined) {
          throw failed.error;
        }
        const resp = await this.registerTasks({ tasks: part.map((i) => requests[i]!) }, options);
        if (resp.results.length !== part.length) {
          throw new BoomerangError(Status.INTERNAL, `${resp.results.length} results for ${part.length} tasks`);
        }
        part.forEach((i, j) => (results[i] = resultOf(resp.results[j]!)));
      } catch (error) {
        failed ??= { error };
        part.forEach((i) => (results[i] = { created: false, error }));
      }
    }
    return results;
  }

  /**
   * The server's frame limit in bytes, for scheduleBatch; 0 when unknown.
   * Asked of the server once.
   */
  protected async frameLimit(signal: AbortSignal | undefined): Promise<number> {
    this.#frameLimit ??= this.getServerInfo({}, signal && { signal }).then((info) => Number(info.maxFrameBytes));
    try {
      return await this.#frameLimit;
    } catch (err) {
      this.#frameLimit = undefined;
      throw err;
    }
  }

  /** Deletes the task with id. */
  async cancel(id: bigint, options?: CallOptions): Promise<void> {
    await this.cancelTask({ id }, options);
  }

  /** Yields every task the query selects, page after page. */
  async *tasks(query: InputOf<"listTasks"> = {}, options?: CallOptions): AsyncGenerator<Task, void, undefined> {
    const page = { ...query };
    for (;;) {
      const resp = await this.listTasks(page, options);
      yield* resp.tasks;
      if (resp.nextPageToken === 0n) {
        return;
      }
      page.pageToken = resp.nextPageToken;
    }
  }

  /** Yields every dead letter the query selects, page after page. */
  async *deadLetters(query: InputOf<"listDeadLetters"> = {}, options?: CallOptions): AsyncGenerator<DeadLetter, void, undefined> {
    const page = { ...query };
    for (;;) {
      const resp = await this.listDeadLetters(page, options);
      yield* resp.deadLetters;
      if (resp.nextPageToken === 0n) {
        return;
      }
      page.pageToken = resp.nextPageToken;
    }
  }
}

/** The registration schedule sends for payload and its schedule. */
function registration(payload: Uint8Array | string, schedule: ScheduleOptions = {}): InputOf<"registerTask"> {
  const req: InputOf<"registerTask"> = {
    payload: typeof payload === "string" ? new TextEncoder().encode(payload) : payload,
    repeatIntervalMs: BigInt(Math.round(schedule.every ?? 0)),
    group: schedule.group ?? "",
    idempotencyKey: schedule.idempotencyKey ?? "",
    cron: schedule.cron ?? "",
    timeZone: schedule.timeZone ?? "",
    replaceKey: schedule.replaceKey ?? "",
    debounceMs: BigInt(Math.round(schedule.debounce ?? 0)),
    maxWaitMs: BigInt(Math.round(schedule.maxWait ?? 0)),
  };
  if (schedule.after !== undefined) {
    req.when = { case: "delayMs", value: BigInt(Math.round(schedule.after)) };
  } else if (schedule.at !== undefined) {
    req.when = { case: "fireAtMs", value: BigInt(typeof schedule.at === "number" ? Math.round(schedule.at) : schedule.at.getTime()) };
  }
  if (schedule.mode !== undefined) {
    req.mode = schedule.mode;
  }
  if (schedule.callback !== undefined) {
    req.callback = schedule.callback;
  }
  if (schedule.retry !== undefined) {
    req.retry = schedule.retry;
  }
  return req;
}

/**
 * Cuts requests into lists of indexes of at most maxBatch requests and
 * limit bytes (0: no byte limit). A request too large alone is reported
 * to tooLarge, with the size its own request would have, and left out.
 */
function split(requests: RequestOf<"registerTask">[], limit: number, tooLarge: (i: number, size: number) => void): number[][] {
  const parts: number[][] = [];
  let cur: number[] = [];
  let size = 0;
  requests.forEach((r, i) => {
    // Field 1 of RegisterTasksRequest: its tag, its length, the task.
    const n = sizeDelimitedEncode(RegisterTaskRequestSchema, r).length + 1;
    if (limit > 0 && n > limit) {
      tooLarge(i, n + envelopeRoom);
      return;
    }
    if (cur.length === maxBatch || (limit > 0 && size + n > limit)) {
      parts.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(i);
    size += n;
  });
  if (cur.length > 0) {
    parts.push(cur);
  }
  return parts;
}

/** One task's result of a registerTasks response. */
function resultOf(r: MessageShape<typeof BoomerangService.method.registerTasks.output>["results"][number]): ScheduleResult {
  switch (r.result.case) {
    case "error":
      return { created: false, error: errorFromWire(r.result.value) };
    case "registered":
      if (r.result.value.task !== undefined) {
        return { task: r.result.value.task, created: r.result.value.created };
      }
  }
  return { created: false, error: new BoomerangError(Status.INTERNAL, "a task's result has neither a task nor an error") };
}

function sessionRefused(err: unknown): boolean {
  return err instanceof BoomerangError && (err.status === Status.SESSION_EXPIRED || err.status === Status.UNAUTHORIZED);
}

/** One signal for a call's own signal and its timeout. */
function callSignal(options: CallOptions | undefined): AbortSignal | undefined {
  const signals: AbortSignal[] = [];
  if (options?.signal !== undefined) {
    signals.push(options.signal);
  }
  if (options?.timeoutMs !== undefined) {
    signals.push(AbortSignal.timeout(options.timeoutMs));
  }
  return signals.length > 1 ? AbortSignal.any(signals) : signals[0];
}
