// The panel's one way to the server: the Connect client of the Boomerang
// API, with the session in the Authorization header.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BoomerangService, ErrorSchema, Status } from "./gen/api/boomerang/v1/boomerang_pb";

export type Api = Client<typeof BoomerangService>;

// apiBase is where the API is: the server names it in a <meta> (behind
// any reverse proxy prefix); the development server proxies "/".
export function apiBase(doc: Document = document): string {
  const meta = doc.querySelector('meta[name="boomerang-api"]')?.getAttribute("content");
  return new URL(meta ?? "/", doc.baseURI).toString();
}

export function createApi(baseUrl: string, session: () => string | undefined): Api {
  const auth: Interceptor = (next) => async (req) => {
    const id = session();
    if (id) req.header.set("Authorization", `Bearer ${id}`);
    return next(req);
  };
  return createClient(BoomerangService, createConnectTransport({ baseUrl, interceptors: [auth] }));
}

// statusOf is the Boomerang status an error carries, if any.
export function statusOf(err: unknown): Status | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorSchema)[0]?.status;
}

// sessionEnded reports an error that means "sign in again".
export function sessionEnded(err: unknown): boolean {
  const s = statusOf(err);
  if (s === Status.SESSION_EXPIRED) return true;
  return err instanceof ConnectError && err.code === Code.Unauthenticated && s !== Status.UNAUTHORIZED;
}

// messageOf is a human message for an error.
export function messageOf(err: unknown): string {
  if (err instanceof ConnectError) {
    const detail = err.findDetails(ErrorSchema)[0];
    if (detail) return detail.field ? `${detail.message} (${detail.field})` : detail.message;
    return err.rawMessage;
  }
  return err instanceof Error ? err.message : String(err);
}
