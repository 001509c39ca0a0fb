// One hook per query. Query keys hold strings, never bigints, which
// TanStack Query cannot hash.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { createContext, useContext } from "react";
import type { Api } from "../api";
import type {
  ListCompletedRequest,
  ListDeadLettersRequest,
  ListGroupsRequest,
  ListTasksRequest,
} from "../gen/api/boomerang/v1/boomerang_pb";
import { useRefresh, clampInterval } from "../refresh";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";

export const ApiContext = createContext<Api | undefined>(undefined);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error("useApi outside ApiContext");
  return api;
}

type Init<T extends { $typeName: string }> = MessageInitShape<GenMessage<T>>;

// keyOf turns a request into a hashable key.
export const keyOf = (v: unknown): string => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x instanceof Uint8Array ? Array.from(x) : x));

function useLive(): number | false {
  const { interval } = useRefresh();
  const info = useServerInfo();
  const min = Number(info.data?.minRefreshMs ?? 0n);
  return interval === 0 ? false : clampInterval(interval, min);
}

export function useServerInfo() {
  const api = useApi();
  return useQuery({ queryKey: ["info"], queryFn: () => api.getServerInfo({}), staleTime: 60_000 });
}

export function useStats(sinceMs: number) {
  const api = useApi();
  return useQuery({
    queryKey: ["stats", sinceMs],
    queryFn: () => api.getStats({ sinceMs: BigInt(sinceMs) }),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useDueHistogram(bucketMs: number, buckets: number) {
  const api = useApi();
  return useQuery({
    queryKey: ["due", bucketMs, buckets],
    queryFn: () => api.getDueHistogram({ bucketMs: BigInt(bucketMs), buckets }),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useTasks(req: Init<ListTasksRequest>) {
  const api = useApi();
  return useQuery({
    queryKey: ["tasks", keyOf(req)],
    queryFn: () => api.listTasks(req),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useTask(id: bigint) {
  const api = useApi();
  return useQuery({ queryKey: ["task", id.toString()], queryFn: () => api.getTask({ id }), refetchInterval: useLive(), retry: false });
}

export function useTaskAttempts(id: bigint) {
  const api = useApi();
  return useQuery({ queryKey: ["attempts", id.toString()], queryFn: () => api.getTaskAttempts({ id }), refetchInterval: useLive() });
}

export function useCompleted(req: Init<ListCompletedRequest>) {
  const api = useApi();
  return useQuery({
    queryKey: ["completed", keyOf(req)],
    queryFn: () => api.listCompleted(req),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useGroups(req: Init<ListGroupsRequest>) {
  const api = useApi();
  return useQuery({
    queryKey: ["groups", keyOf(req)],
    queryFn: () => api.listGroups(req),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useAuditLog(limit: number) {
  const api = useApi();
  return useQuery({ queryKey: ["audit", limit], queryFn: () => api.listAuditLog({ limit }), refetchInterval: useLive() });
}

export function useDeadLetters(req: Init<ListDeadLettersRequest>) {
  const api = useApi();
  return useQuery({
    queryKey: ["deadLetters", keyOf(req)],
    queryFn: () => api.listDeadLetters(req),
    refetchInterval: useLive(),
    placeholderData: keepPreviousData,
  });
}

export function useClients() {
  const api = useApi();
  return useQuery({ queryKey: ["clients"], queryFn: () => api.listClients({}), refetchInterval: useLive() });
}

export function usePools() {
  const api = useApi();
  return useQuery({ queryKey: ["pools"], queryFn: () => api.listPools({}), refetchInterval: useLive() });
}

export function useCluster() {
  const api = useApi();
  return useQuery({ queryKey: ["cluster"], queryFn: () => api.getCluster({}), refetchInterval: useLive() });
}
