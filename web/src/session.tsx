// The signed-in session: who, with which role, until when. Kept in
// sessionStorage so a reload keeps it and closing the tab ends it.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { Role as WireRole, type LoginResponse } from "./gen/api/boomerang/v1/boomerang_pb";

// Role decides what the panel shows: an admin and a read-only client see
// every client's data; only admins and clients change anything.
export type Role = "admin" | "client" | "readonly";

export interface Session {
  id: string;
  client: string;
  role: Role;
  expiresAtMs: number;
}

// roleOf reads the role a login answered with.
export function roleOf(resp: Pick<LoginResponse, "admin" | "role">): Role {
  switch (resp.role) {
    case WireRole.ADMIN:
      return "admin";
    case WireRole.READ_ONLY:
      return "readonly";
    case WireRole.CLIENT:
      return "client";
  }
  return resp.admin ? "admin" : "client";
}

export const canChange = (s: Session | undefined) => s !== undefined && s.role !== "readonly";
export const seesAll = (s: Session | undefined) => s !== undefined && s.role !== "client";

const storageKey = "boomerang.session";

export function loadSession(storage: Storage = sessionStorage): Session | undefined {
  try {
    const s = JSON.parse(storage.getItem(storageKey) ?? "null") as Session | null;
    return s && s.expiresAtMs > Date.now() ? s : undefined;
  } catch {
    return undefined;
  }
}

interface SessionState {
  session: Session | undefined;
  signIn: (s: Session) => void;
  signOut: (reason?: string) => void;
  reason: string | undefined; // why the last session ended
}

const SessionContext = createContext<SessionState | undefined>(undefined);

export function SessionProvider({ children, initial }: { children: ReactNode; initial?: Session }) {
  const [session, setSession] = useState<Session | undefined>(initial);
  const [reason, setReason] = useState<string>();
  const signIn = useCallback((s: Session) => {
    sessionStorage.setItem(storageKey, JSON.stringify(s));
    setReason(undefined);
    setSession(s);
  }, []);
  const signOut = useCallback((why?: string) => {
    sessionStorage.removeItem(storageKey);
    setReason(why);
    setSession(undefined);
  }, []);
  // A session that runs out while the panel is open ends here too.
  useEffect(() => {
    if (!session) return;
    const left = session.expiresAtMs - Date.now();
    const t = setTimeout(() => signOut("Your session expired. Sign in again."), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(t);
  }, [session, signOut]);
  const value = useMemo(() => ({ session, signIn, signOut, reason }), [session, signIn, signOut, reason]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}
