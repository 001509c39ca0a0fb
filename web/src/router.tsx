// Routes. Every filter lives in the URL's search parameters, so each view
// is a link that can be shared.
import { Outlet, createRootRoute, createRoute, createRouter, redirect, useNavigate, useRouterState } from "@tanstack/react-router";
import { useEffect } from "react";
import { Layout } from "./components/Layout";
import { AuditPage } from "./routes/Audit";
import { ClientsPage } from "./routes/Clients";
import { ClusterPage } from "./routes/Cluster";
import { CompletedPage } from "./routes/Completed";
import { DeadLettersPage } from "./routes/DeadLetters";
import { GroupsPage } from "./routes/Groups";
import { LoginPage } from "./routes/Login";
import { OverviewPage } from "./routes/Overview";
import { TaskPage } from "./routes/Task";
import { TasksPage } from "./routes/Tasks";
import { loadSession, seesAll, useSession } from "./session";

type Raw = Record<string, unknown>;
const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : undefined);
const num = (v: unknown) => (v === undefined || v === "" || Number.isNaN(Number(v)) ? undefined : Number(v));
const bool = (v: unknown) => (v === true || v === "true" ? true : undefined);
const oneOf = <T extends string>(v: unknown, ok: readonly T[]) => (ok.includes(v as T) ? (v as T) : undefined);

export interface TasksSearch {
  client?: string;
  group?: string;
  status?: "scheduled" | "retrying";
  recurring?: "yes" | "no";
  dueFrom?: number;
  dueTo?: number;
  payload?: string;
  shard?: number;
  order?: "id" | "due";
}
export interface DeadLettersSearch {
  client?: string;
  group?: string;
  error?: string;
  payload?: string;
  failedBefore?: number;
}
export interface GroupsSearch {
  client?: string;
  contains?: string;
  blocked?: boolean;
}
export interface CompletedSearch {
  client?: string;
  group?: string;
  task?: string;
  failed?: boolean;
}
export interface OverviewSearch {
  range?: "15m" | "1h" | "6h" | "24h";
  bucket?: "10s" | "1m" | "10m";
}

// Root sends the page to sign-in when the session ends while it is open;
// the app route's beforeLoad does it for navigations.
function Root() {
  const { session } = useSession();
  const loc = useRouterState({ select: (s) => s.location });
  const navigate = useNavigate();
  const signedOut = !session && loc.pathname !== "/login";
  useEffect(() => {
    if (signedOut) void navigate({ to: "/login", search: { redirect: loc.href }, replace: true });
  }, [signedOut, loc.href, navigate]);
  return signedOut ? null : <Outlet />;
}

const rootRoute = createRootRoute({ component: Root });
const loginRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: "login",
  validateSearch: (s: Raw): { redirect?: string } => ({ redirect: str(s.redirect) }),
  component: LoginPage,
});
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: "app",
  beforeLoad: ({ location }) => {
    if (!loadSession()) throw redirect({ to: "/login", search: { redirect: location.href } });
  },
  component: Layout,
});
const homeRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/",
  beforeLoad: () => {
    throw redirect({ to: seesAll(loadSession()) ? "/overview" : "/tasks", replace: true });
  },
});
const overviewRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "overview",
  validateSearch: (s: Raw): OverviewSearch => ({
    range: oneOf(s.range, ["15m", "1h", "6h", "24h"] as const),
    bucket: oneOf(s.bucket, ["10s", "1m", "10m"] as const),
  }),
  component: OverviewPage,
});
const tasksRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "tasks",
  validateSearch: (s: Raw): TasksSearch => ({
    client: str(s.client),
    group: str(s.group),
    status: oneOf(s.status, ["scheduled", "retrying"] as const),
    recurring: oneOf(s.recurring, ["yes", "no"] as const),
    dueFrom: num(s.dueFrom),
    dueTo: num(s.dueTo),
    payload: str(s.payload),
    shard: num(s.shard),
    order: oneOf(s.order, ["id", "due"] as const),
  }),
  component: TasksPage,
});
const taskRoute = createRoute({ getParentRoute: () => appRoute, path: "tasks/$taskId", component: TaskPage });
const completedRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "completed",
  validateSearch: (s: Raw): CompletedSearch => ({ client: str(s.client), group: str(s.group), task: str(s.task), failed: bool(s.failed) }),
  component: CompletedPage,
});
const groupsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "groups",
  validateSearch: (s: Raw): GroupsSearch => ({ client: str(s.client), contains: str(s.contains), blocked: bool(s.blocked) }),
  component: GroupsPage,
});
const deadLettersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "dead-letters",
  validateSearch: (s: Raw): DeadLettersSearch => ({
    client: str(s.client),
    group: str(s.group),
    error: str(s.error),
    payload: str(s.payload),
    failedBefore: num(s.failedBefore),
  }),
  component: DeadLettersPage,
});
const auditRoute = createRoute({ getParentRoute: () => appRoute, path: "audit", component: AuditPage });
const clientsRoute = createRoute({ getParentRoute: () => appRoute, path: "clients", component: ClientsPage });
const clusterRoute = createRoute({ getParentRoute: () => appRoute, path: "cluster", component: ClusterPage });

export const routeTree = rootRoute.addChildren([
  loginRoute,
  appRoute.addChildren([
    homeRoute,
    overviewRoute,
    tasksRoute,
    taskRoute,
    completedRoute,
    groupsRoute,
    deadLettersRoute,
    auditRoute,
    clientsRoute,
    clusterRoute,
  ]),
]);

// basepath is the panel's path as the server serves it (<base href>).
export function basepath(doc: Document = document): string {
  return new URL(doc.baseURI).pathname.replace(/\/$/, "") || "/";
}

export function makeRouter(base = basepath()) {
  return createRouter({ routeTree, basepath: base, defaultPreload: false });
}

declare module "@tanstack/react-router" {
  interface Register {
    router: ReturnType<typeof makeRouter>;
  }
}
