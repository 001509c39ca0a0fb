import { Paper, Text } from "@mantine/core";
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
}

// TimeChart draws series over time (x in Unix seconds) with uPlot.
export function TimeChart({ title, x, series, unit }: { title: string; x: number[]; series: Series[]; unit?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 180,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, points: { show: false } }))],
      axes: [{}, { size: 80, values: (_u, vals) => vals.map((v) => `${+v.toFixed(2)}${unit ?? ""}`) }],
      legend: { live: true },
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, series, unit]);
  return (
    <Paper withBorder p="xs" role="figure" aria-label={title}>
      <Text fw={500} size="sm">
        {title}
      </Text>
      <div ref={box} />
    </Paper>
  );
}
