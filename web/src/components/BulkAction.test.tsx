import { create } from "@bufbuild/protobuf";
import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Api } from "../api";
import { BulkAction, BulkDeadLettersResponseSchema, type BulkDeadLettersRequest } from "../gen/api/boomerang/v1/boomerang_pb";
import { renderUI } from "../test-utils";
import { BulkDeadLetterButton } from "./BulkAction";

const filter = { client: "", group: "g", errorContains: "down", payloadContains: new Uint8Array(), failedBeforeMs: 0n };

describe("BulkDeadLetterButton", () => {
  it("counts with a dry run, then works through batches showing progress", async () => {
    const calls: Partial<BulkDeadLettersRequest>[] = [];
    const answers = [
      { matched: 150n, more: false }, // the dry run
      { matched: 100n, done: 99n, skipped: 1n, lastId: 500n, more: true, lastError: "in flight" },
      { matched: 50n, done: 50n, lastId: 900n, more: false },
    ];
    const api: Partial<Api> = {
      bulkDeadLetters: vi.fn(async (req: Partial<BulkDeadLettersRequest>) => {
        calls.push(req);
        return create(BulkDeadLettersResponseSchema, answers[calls.length - 1]);
      }) as unknown as Api["bulkDeadLetters"],
    };
    const onDone = vi.fn();
    renderUI(<BulkDeadLetterButton action={BulkAction.REPLAY} filter={filter} onDone={onDone} />, api);
    await userEvent.click(screen.getByRole("button", { name: "Replay all matching…" }));
    expect(await screen.findByText(/150 dead letters match the filter/)).toBeInTheDocument();
    expect(calls[0]).toMatchObject({ dryRun: true, group: "g", errorContains: "down", action: BulkAction.REPLAY });

    await userEvent.click(screen.getByRole("button", { name: "Replay 150" }));
    expect(await screen.findByText("Replayed 149, skipped 1 of 150 — done.")).toBeInTheDocument();
    expect(screen.getByText("Last refusal: in flight")).toBeInTheDocument();
    expect(calls.slice(1).map((c) => [c.afterId, c.dryRun])).toEqual([
      [0n, undefined],
      [500n, undefined],
    ]);
    expect(onDone).toHaveBeenCalledOnce();
  });
});
