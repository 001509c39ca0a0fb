import { NativeSelect } from "@mantine/core";
import { allowedChoices, clampInterval, useRefresh } from "../refresh";
import { formatDuration } from "../format";

// RefreshMenu picks the auto-refresh interval; choices below the
// server's minimum are not offered.
export function RefreshMenu({ minMs }: { minMs: number }) {
  const { interval, setInterval } = useRefresh();
  const data = allowedChoices(minMs).map((c) => ({ value: String(c), label: c === 0 ? "Off" : `Every ${formatDuration(c)}` }));
  return (
    <NativeSelect
      aria-label="Auto-refresh"
      size="xs"
      w={140}
      data={data}
      value={String(clampInterval(interval, minMs))}
      onChange={(e) => setInterval(Number(e.currentTarget.value))}
    />
  );
}
