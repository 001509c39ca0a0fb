import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client as ConnectClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BoomerangService, ErrorSchema, Status } from "./gen/api/boomerang/v1/boomerang_pb.js";
import { BoomerangApi, type Credentials, type Logger, type Operation, type RequestOf, type ResponseOf, type Session } from "./api.js";
import { errorFromWire, messageOf } from "./errors.js";

/** Options of WebClient. */
export interface WebClientOptions {
  /**
   * The server's HTTP address, e.g. "http://127.0.0.1:7071". Requests use
   * the Connect protocol over fetch.
   */
  baseUrl?: string;
  /** Any Connect transport instead of baseUrl, e.g. gRPC-Web or one with interceptors. */
  transport?: Transport;
  /** With baseUrl: JSON instead of binary messages. Default false. */
  useJson?: boolean;
  /** With baseUrl: the fetch to use. Default: globalThis.fetch. */
  fetch?: typeof globalThis.fetch;
  /** Logs in with these before the first call and whenever the session is refused. */
  credentials?: Credentials;
  /** Uses an existing session, e.g. one saved by a command-line tool. */
  session?: Session;
  /** Where refresh failures are logged. Default: nowhere. */
  logger?: Logger;
}

/** Connect codes of errors that carry no Boomerang detail (from a proxy, say). */
const codeStatus = new Map<Code, Status>([
  [Code.InvalidArgument, Status.INVALID_REQUEST],
  [Code.Unauthenticated, Status.UNAUTHORIZED],
  [Code.PermissionDenied, Status.UNAUTHORIZED],
  [Code.NotFound, Status.NOT_FOUND],
  [Code.ResourceExhausted, Status.BUSY],
  [Code.FailedPrecondition, Status.CONFLICT],
  [Code.Internal, Status.INTERNAL],
]);

/**
 * WebClient calls Boomerang over the Connect API on its HTTP port, with
 * fetch: for browsers, edge runtimes and anywhere raw TCP is not available.
 * It has the same operations and session handling as the TCP Client: it
 * logs in with its credentials before the first call, refreshes the
 * session when two thirds of its life have passed (on the next call, with
 * no timers), and logs in again when the server refuses it.
 *
 * Errors the server reports are BoomerangErrors, as over TCP; network
 * failures, aborts and timeouts are the transport's ConnectErrors.
 * Browsers on another origin than the server need a proxy that allows
 * cross-origin requests.
 */
export class WebClient extends BoomerangApi {
  readonly #rpc: ConnectClient<typeof BoomerangService>;

  constructor(options: WebClientOptions) {
    super(options.credentials, options.session, options.logger);
    let transport = options.transport;
    if (transport === undefined) {
      if (options.baseUrl === undefined) {
        throw new Error("WebClient needs a baseUrl or a transport");
      }
      transport = createConnectTransport({
        baseUrl: options.baseUrl,
        useBinaryFormat: options.useJson !== true,
        ...(options.fetch !== undefined && { fetch: options.fetch }),
      });
    }
    this.#rpc = createClient(BoomerangService, transport);
  }

  protected override async send<K extends Operation>(op: K, request: RequestOf<K>, sessionId: string, signal: AbortSignal | undefined): Promise<ResponseOf<K>> {
    const method = this.#rpc[op] as unknown as (req: RequestOf<K>, options: object) => Promise<ResponseOf<K>>;
    try {
      return await method(request, {
        ...(signal !== undefined && { signal }),
        ...(sessionId !== "" && { headers: { Authorization: `Bearer ${sessionId}` } }),
      });
    } catch (err) {
      throw fromConnect(err);
    }
  }

  protected override async beforeCall(signal: AbortSignal | undefined): Promise<void> {
    if (this.session === undefined) {
      await this.loginIfNeeded(signal);
      return;
    }
    if (this.refreshDue(Date.now()) === 0) {
      try {
        await this.refreshOnce(signal);
      } catch (err) {
        // The call itself will tell whether the session still works.
        this.log.warn("boomerang: session refresh failed", { error: messageOf(err) });
      }
    }
  }
}

/** The BoomerangError a Connect error stands for, or the Connect error itself. */
function fromConnect(err: unknown): unknown {
  const ce = ConnectError.from(err);
  const [detail] = ce.findDetails(ErrorSchema);
  if (detail !== undefined) {
    return errorFromWire(detail);
  }
  const status = codeStatus.get(ce.code);
  return status === undefined ? ce : errorFromWire(create(ErrorSchema, { status, message: ce.rawMessage }));
}
