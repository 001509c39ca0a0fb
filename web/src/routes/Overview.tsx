import { Alert, Card, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from "@mantine/core";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { useMemo } from "react";
import { ErrorAlert } from "../components/ErrorAlert";
import { HeatMap, type Cell } from "../components/HeatMap";
import { TimeChart, type Series } from "../components/TimeChart";
import { formatDuration } from "../format";
import { Protocol, type StatsSample } from "../gen/api/boomerang/v1/boomerang_pb";
import { useDueHistogram, useStats } from "../hooks/queries";
import { seesAll, useSession } from "../session";

const route = getRouteApi("/app/overview");

const ranges = { "15m": 15 * 60_000, "1h": 3_600_000, "6h": 6 * 3_600_000, "24h": 24 * 3_600_000 };
const buckets = { "10s": [10_000, 36], "1m": [60_000, 30], "10m": [600_000, 36] } as const;

// rates turns a cumulative counter into per-second rates between samples.
export function rates(samples: StatsSample[], pick: (s: StatsSample) => bigint): (number | null)[] {
  return samples.map((s, i) => {
    if (i === 0) return null;
    const prev = samples[i - 1];
    const dt = (Number(s.atMs) - Number(prev.atMs)) / 1000;
    return dt > 0 ? Number(pick(s) - pick(prev)) / dt : null;
  });
}

function Counter({ label, value }: { label: string; value: string | number }) {
  return (
    <Card withBorder padding="sm">
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={700} size="xl" data-testid={`counter-${label}`}>
        {value}
      </Text>
    </Card>
  );
}

export function OverviewPage() {
  const { session } = useSession();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/overview" });
  const range = search.range ?? "1h";
  const bucket = search.bucket ?? "1m";
  const since = useMemo(() => Date.now() - ranges[range], [range]);
  const stats = useStats(since);
  const due = useDueHistogram(buckets[bucket][0], buckets[bucket][1]);
  const samples = stats.data?.samples ?? [];
  const charts = useMemo(() => chartData(samples), [samples]);
  if (!seesAll(session)) {
    return <Alert>The overview shows every client's counters: ask an admin. Your tasks are under Tasks.</Alert>;
  }
  const last = samples[samples.length - 1];
  const select = (c: Cell) =>
    navigate({ to: "/tasks", search: { shard: c.shard, dueFrom: c.fromMs, dueTo: c.toMs, order: "due" } });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Overview</Title>
        <SegmentedControl
          aria-label="Time range"
          value={range}
          data={Object.keys(ranges)}
          onChange={(v) => navigate({ search: (s) => ({ ...s, range: v as keyof typeof ranges }) })}
        />
      </Group>
      <ErrorAlert error={stats.error} />
      {last && (
        <SimpleGrid cols={{ base: 2, md: 6 }}>
          <Counter label="Registered" value={last.registered.toString()} />
          <Counter label="Delivered" value={last.delivered.toString()} />
          <Counter label="Failed attempts" value={last.failed.toString()} />
          <Counter label="Dead letters" value={last.deadLetters.toString()} />
          <Counter label="Blocked groups" value={last.blockedGroups.toString()} />
          <Counter label="In flight" value={last.delivering.toString()} />
        </SimpleGrid>
      )}
      {samples.length > 1 && (
        <SimpleGrid cols={{ base: 1, lg: 2 }}>
          <TimeChart title="Per second" x={charts.x} series={charts.rates} />
          <TimeChart title="Queues" x={charts.x} series={charts.gauges} />
          <TimeChart title="Fire lag (start − due)" x={charts.x} series={charts.lag} unit=" ms" />
          <TimeChart title="Attempt duration" x={charts.x} series={charts.took} unit=" ms" />
        </SimpleGrid>
      )}
      {last && <ProtocolTable sample={last} />}
      <Group justify="space-between">
        <Title order={3}>Timing wheel: upcoming runs</Title>
        <SegmentedControl
          aria-label="Bucket size"
          value={bucket}
          data={Object.keys(buckets)}
          onChange={(v) => navigate({ search: (s) => ({ ...s, bucket: v as keyof typeof buckets }) })}
        />
      </Group>
      <ErrorAlert error={due.error} />
      {due.data && (
        <>
          <Text size="sm">
            Overdue (due, not started): {due.data.overdue.toString()}
            {due.data.truncated && " — the scan stopped at its bound; counts are low"}
          </Text>
          <HeatMap
            h={{
              fromMs: Number(due.data.fromMs),
              bucketMs: Number(due.data.bucketMs),
              buckets: due.data.buckets,
              shards: due.data.shards,
              counts: due.data.counts.map(Number),
            }}
            onSelect={select}
          />
        </>
      )}
    </Stack>
  );
}

function ProtocolTable({ sample }: { sample: StatsSample }) {
  const p = sample.attemptDuration;
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Table withTableBorder aria-label="Deliveries by protocol">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Protocol</Table.Th>
            <Table.Th>Delivered</Table.Th>
            <Table.Th>Failed</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {sample.byProtocol.map((c) => (
            <Table.Tr key={c.protocol}>
              <Table.Td>{Protocol[c.protocol]}</Table.Td>
              <Table.Td>{c.delivered.toString()}</Table.Td>
              <Table.Td>{c.failed.toString()}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Table withTableBorder aria-label="Latest latency percentiles">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Latest interval</Table.Th>
            <Table.Th>p50</Table.Th>
            <Table.Th>p90</Table.Th>
            <Table.Th>p99</Table.Th>
            <Table.Th>max</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {[
            ["Fire lag", sample.fireLag],
            ["Attempt duration", p],
          ].map(([label, q]) => {
            const v = q as typeof p;
            return (
              <Table.Tr key={label as string}>
                <Table.Td>{label as string}</Table.Td>
                {v && v.count > 0n ? (
                  [v.p50Ms, v.p90Ms, v.p99Ms, v.maxMs].map((x, i) => <Table.Td key={i}>{formatDuration(x)}</Table.Td>)
                ) : (
                  <Table.Td colSpan={4}>no attempts</Table.Td>
                )}
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </SimpleGrid>
  );
}

function chartData(samples: StatsSample[]) {
  const x = samples.map((s) => Number(s.atMs) / 1000);
  const pct = (pick: (s: StatsSample) => number | undefined) => samples.map((s) => pick(s) ?? null);
  const rates_: Series[] = [
    { label: "registered", values: rates(samples, (s) => s.registered), color: "#1c7ed6" },
    { label: "delivered", values: rates(samples, (s) => s.delivered), color: "#2f9e44" },
    { label: "failed", values: rates(samples, (s) => s.failed), color: "#e03131" },
    { label: "dead-lettered", values: rates(samples, (s) => s.deadLettered), color: "#862e9c" },
  ];
  const gauges: Series[] = [
    { label: "dead letters", values: samples.map((s) => Number(s.deadLetters)), color: "#862e9c" },
    { label: "blocked groups", values: samples.map((s) => Number(s.blockedGroups)), color: "#e8590c" },
    { label: "waiting", values: samples.map((s) => Number(s.waiting)), color: "#1c7ed6" },
    { label: "in flight", values: samples.map((s) => Number(s.delivering)), color: "#2f9e44" },
  ];
  const lag: Series[] = [
    { label: "p50", values: pct((s) => (s.fireLag?.count ? s.fireLag.p50Ms : undefined)), color: "#2f9e44" },
    { label: "p99", values: pct((s) => (s.fireLag?.count ? s.fireLag.p99Ms : undefined)), color: "#e03131" },
  ];
  const took: Series[] = [
    { label: "p50", values: pct((s) => (s.attemptDuration?.count ? s.attemptDuration.p50Ms : undefined)), color: "#2f9e44" },
    { label: "p90", values: pct((s) => (s.attemptDuration?.count ? s.attemptDuration.p90Ms : undefined)), color: "#f08c00" },
    { label: "p99", values: pct((s) => (s.attemptDuration?.count ? s.attemptDuration.p99Ms : undefined)), color: "#e03131" },
  ];
  return { x, rates: rates_, gauges, lag, took };
}
