import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { renderUI } from "../test-utils";
import { HeatMap } from "./HeatMap";

describe("HeatMap", () => {
  const h = { fromMs: 1_000_000, bucketMs: 60_000, buckets: 3, shards: 4, counts: [0, 0, 0, 0, 5, 0, 0, 0, 0, 1, 0, 2] };

  it("draws a row per shard with runs and a button per busy cell", () => {
    renderUI(<HeatMap h={h} onSelect={() => {}} />);
    expect(screen.getAllByRole("row")).toHaveLength(3); // header, shards 1 and 3
    expect(screen.getAllByRole("button")).toHaveLength(3);
    expect(screen.getByText(/2 of 4 shards have runs/)).toBeInTheDocument();
  });

  it("selects a cell's shard and time range, by keyboard too", async () => {
    const onSelect = vi.fn();
    renderUI(<HeatMap h={h} onSelect={onSelect} />);
    const cell = screen.getByRole("button", { name: /^shard 3 from .*: 2 runs$/ });
    cell.focus();
    await userEvent.keyboard("{Enter}");
    expect(onSelect).toHaveBeenCalledWith({ shard: 3, fromMs: 1_120_000, toMs: 1_180_000, count: 2 });
  });

  it("says so when nothing is due", () => {
    renderUI(<HeatMap h={{ ...h, counts: new Array(12).fill(0) }} onSelect={() => {}} />);
    expect(screen.getByText("No runs due in this window.")).toBeInTheDocument();
  });
});
