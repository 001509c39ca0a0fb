import { Box, Text, Tooltip, UnstyledButton } from "@mantine/core";

export interface Histogram {
  fromMs: number;
  bucketMs: number;
  buckets: number;
  shards: number;
  counts: number[]; // counts[shard * buckets + bucket]
}

export interface Cell {
  shard: number;
  fromMs: number;
  toMs: number;
  count: number;
}

function clock(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}:${String(d.getSeconds()).padStart(2, "0")}`;
}

// HeatMap draws upcoming runs as shards (rows) × time buckets (columns);
// a cell with runs is a button that selects them.
export function HeatMap({ h, onSelect }: { h: Histogram; onSelect: (c: Cell) => void }) {
  const max = Math.max(1, ...h.counts);
  const label = (b: number) => clock(h.fromMs + b * h.bucketMs);
  const every = Math.max(1, Math.ceil(h.buckets / 6));
  // Only shards with runs get a row: a node has hundreds of shards.
  const rows = Array.from({ length: h.shards }, (_, shard) => shard).filter((shard) =>
    h.counts.slice(shard * h.buckets, (shard + 1) * h.buckets).some((n) => n > 0),
  );
  if (rows.length === 0) return <Text c="dimmed">No runs due in this window.</Text>;
  return (
    <Box style={{ overflowX: "auto" }}>
      <table role="grid" aria-label="Upcoming runs by shard and time" style={{ borderCollapse: "collapse", fontSize: 10 }}>
        <thead>
          <tr>
            <th scope="col">shard</th>
            {Array.from({ length: h.buckets }, (_, b) => (
              <th key={b} scope="col" style={{ fontWeight: 400, minWidth: 14 }}>
                {b % every === 0 ? label(b) : ""}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((shard) => (
            <tr key={shard}>
              <th scope="row" style={{ fontWeight: 400, paddingRight: 4, textAlign: "right" }}>
                {shard}
              </th>
              {Array.from({ length: h.buckets }, (_, b) => {
                const count = h.counts[shard * h.buckets + b] ?? 0;
                const cell: Cell = { shard, fromMs: h.fromMs + b * h.bucketMs, toMs: h.fromMs + (b + 1) * h.bucketMs, count };
                const bg = count === 0 ? "var(--mantine-color-gray-1)" : `rgba(28, 126, 214, ${0.2 + (0.8 * count) / max})`;
                return (
                  <td key={b} style={{ padding: 1 }}>
                    {count === 0 ? (
                      <div style={{ width: 14, height: 10, background: bg }} />
                    ) : (
                      <Tooltip label={`shard ${shard}, ${label(b)}: ${count}`}>
                        <UnstyledButton
                          aria-label={`shard ${shard} from ${label(b)}: ${count} runs`}
                          onClick={() => onSelect(cell)}
                          style={{ display: "block", width: 14, height: 10, background: bg }}
                        />
                      </Tooltip>
                    )}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      <Text size="xs" c="dimmed">
        {rows.length} of {h.shards} shards have runs in this window. Each row is a shard, each column {Math.round(h.bucketMs / 1000)} s;
        darker means more runs. Select a cell to list its tasks.
      </Text>
    </Box>
  );
}
