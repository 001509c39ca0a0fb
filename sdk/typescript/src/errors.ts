import { Status, type Error as WireError } from "./gen/api/boomerang/v1/boomerang_pb.js";

/**
 * A request the server refused, or a connection it closed, with the status,
 * message and offending field it gave. Each status has its own subclass
 * (NotFoundError, BusyError, ...), so `err instanceof NotFoundError` picks
 * one out; `statusOf(err)` reads the status of any error.
 */
export class BoomerangError extends Error {
  /** The server's status code. */
  readonly status: Status;
  /** The server's message, for humans. */
  readonly serverMessage: string;
  /** INVALID_REQUEST: the field that broke a rule, e.g. "delay_ms". */
  readonly field: string;

  constructor(status: Status, serverMessage: string, field = "") {
    super(describe(status, serverMessage, field));
    this.status = status;
    this.serverMessage = serverMessage;
    this.field = field;
    this.name = new.target.name;
  }
}

/** A field breaks a rule; `field` names it. */
export class InvalidRequestError extends BoomerangError {}
/**
 * No session, an unknown session, a wrong password, or an operation the
 * client may not perform.
 */
export class UnauthorizedError extends BoomerangError {}
/**
 * The session expired; log in again. A client with credentials does so by
 * itself and retries once.
 */
export class SessionExpiredError extends BoomerangError {}
/**
 * No such task, dead letter, group or client for this caller. Other
 * clients' objects are not found either.
 */
export class NotFoundError extends BoomerangError {}
/** The server is overloaded; retry later. */
export class BusyError extends BoomerangError {}
/** The group has too many waiting tasks; retry later. */
export class GroupFullError extends BoomerangError {}
/**
 * The request clashes with the current state, such as a task whose
 * delivery is under way.
 */
export class ConflictError extends BoomerangError {}
/** A server fault; the request may or may not have taken effect. */
export class InternalError extends BoomerangError {}
/** The server answered with a status this SDK does not know. */
export class UnknownStatusError extends BoomerangError {}

const byStatus = new Map<Status, new (status: Status, message: string, field?: string) => BoomerangError>([
  [Status.INVALID_REQUEST, InvalidRequestError],
  [Status.UNAUTHORIZED, UnauthorizedError],
  [Status.SESSION_EXPIRED, SessionExpiredError],
  [Status.NOT_FOUND, NotFoundError],
  [Status.BUSY, BusyError],
  [Status.GROUP_FULL, GroupFullError],
  [Status.CONFLICT, ConflictError],
  [Status.INTERNAL, InternalError],
]);

const labels = new Map<Status, string>([
  [Status.INVALID_REQUEST, "invalid request"],
  [Status.UNAUTHORIZED, "unauthorized"],
  [Status.SESSION_EXPIRED, "session expired"],
  [Status.NOT_FOUND, "not found"],
  [Status.BUSY, "server busy"],
  [Status.GROUP_FULL, "group full"],
  [Status.CONFLICT, "conflict"],
  [Status.INTERNAL, "internal server error"],
]);

/** Reads like "not found: task 42: not found". */
function describe(status: Status, message: string, field: string): string {
  let s = labels.get(status) ?? `unknown status ${status}`;
  if (field !== "" && !message.includes(field)) {
    s += `: field ${field}`;
  }
  return message === "" ? s : `${s}: ${message}`;
}

/** The BoomerangError subclass for a wire Error. */
export function errorFromWire(e: WireError): BoomerangError {
  const Class = byStatus.get(e.status) ?? UnknownStatusError;
  return new Class(e.status, e.message, e.field);
}

/**
 * The status of a failed request: the status of a BoomerangError, OK for
 * null or undefined, and UNSPECIFIED for errors that did not come from the
 * server (a lost connection, an aborted call).
 */
export function statusOf(err: unknown): Status {
  if (err === null || err === undefined) {
    return Status.OK;
  }
  if (err instanceof BoomerangError) {
    return err.status;
  }
  if (err instanceof ConnectionLostError && err.cause instanceof BoomerangError) {
    return err.cause.status;
  }
  return Status.UNSPECIFIED;
}

/**
 * The connection broke while the request was in flight. The request may or
 * may not have taken effect; retry it with an idempotency key to be safe.
 * `cause` is a BoomerangError when the server closed the connection with an
 * error frame.
 */
export class ConnectionLostError extends Error {
  constructor(cause: unknown) {
    super(`connection lost; the request may or may not have taken effect: ${messageOf(cause)}`, { cause });
    this.name = "ConnectionLostError";
  }
}

/** The client was closed. */
export class ClientClosedError extends Error {
  constructor() {
    super("client closed");
    this.name = "ClientClosedError";
  }
}

/**
 * The server sent something the protocol does not allow, such as a
 * response without a body.
 */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(`protocol violation: ${message}`);
    this.name = "ProtocolError";
  }
}

/** The message of anything thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
