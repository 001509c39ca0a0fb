// Auto-refresh: one interval for every live query, chosen from a menu the
// server caps (GetServerInfo.min_refresh_ms).
import { createContext, useContext, useMemo, useState, type ReactNode } from "react";

export const refreshChoices = [0, 1000, 2000, 5000, 10_000, 30_000, 60_000];

// allowedChoices drops intervals below the server's minimum.
export function allowedChoices(minMs: number): number[] {
  return refreshChoices.filter((c) => c === 0 || c >= minMs);
}

// clampInterval moves an interval up to the server's minimum.
export function clampInterval(ms: number, minMs: number): number {
  return ms === 0 ? 0 : Math.max(ms, minMs);
}

const storageKey = "boomerang.refresh";

interface RefreshState {
  interval: number; // 0 = off
  setInterval: (ms: number) => void;
}

const RefreshContext = createContext<RefreshState>({ interval: 0, setInterval: () => {} });

export function RefreshProvider({ children }: { children: ReactNode }) {
  const [interval, set] = useState<number>(() => Number(localStorage.getItem(storageKey) ?? 5000));
  const value = useMemo(
    () => ({
      interval,
      setInterval: (ms: number) => {
        localStorage.setItem(storageKey, String(ms));
        set(ms);
      },
    }),
    [interval],
  );
  return <RefreshContext.Provider value={value}>{children}</RefreshContext.Provider>;
}

export const useRefresh = () => useContext(RefreshContext);
