import { Button, Group, Modal, Progress, Stack, Text } from "@mantine/core";
import { useState } from "react";
import { ErrorAlert } from "./ErrorAlert";
import { BulkAction } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi } from "../hooks/queries";

// DeadLetterFilter is the filter dead letter lists and bulk actions share.
export interface DeadLetterFilter {
  client: string;
  group: string;
  errorContains: string;
  payloadContains: Uint8Array;
  failedBeforeMs: bigint;
}

type Phase = { kind: "idle" } | { kind: "counted"; matched: bigint; more: boolean } | { kind: "running" | "finished"; matched: bigint; done: bigint; skipped: bigint; lastError: string };

const batch = 100;

// BulkDeadLetterButton replays or deletes every dead letter matching a
// filter: a dry run counts them first, then batches run with progress.
export function BulkDeadLetterButton({ action, filter, onDone }: { action: BulkAction; filter: DeadLetterFilter; onDone: () => void }) {
  const api = useApi();
  const [phase, setPhase] = useState<Phase>({ kind: "idle" });
  const [error, setError] = useState<unknown>();
  const verb = action === BulkAction.REPLAY ? "Replay" : "Delete";
  const count = async () => {
    setError(undefined);
    try {
      const r = await api.bulkDeadLetters({ ...filter, action, dryRun: true });
      setPhase({ kind: "counted", matched: r.matched, more: r.more });
    } catch (e) {
      setError(e);
    }
  };
  const run = async (matched: bigint) => {
    let after = 0n;
    let state = { kind: "running" as const, matched, done: 0n, skipped: 0n, lastError: "" };
    setPhase(state);
    try {
      for (;;) {
        const r = await api.bulkDeadLetters({ ...filter, action, afterId: after, limit: batch });
        state = { ...state, done: state.done + r.done, skipped: state.skipped + r.skipped, lastError: r.lastError || state.lastError };
        setPhase(state);
        if (!r.more) break;
        after = r.lastId;
      }
      setPhase({ ...state, kind: "finished" });
    } catch (e) {
      setError(e);
      setPhase({ ...state, kind: "finished" });
    }
    onDone();
  };
  const close = () => setPhase({ kind: "idle" });
  return (
    <>
      <Button size="xs" variant="light" color={action === BulkAction.DELETE ? "red" : undefined} onClick={count}>
        {verb} all matching…
      </Button>
      <ErrorAlert error={phase.kind === "idle" ? error : undefined} />
      <Modal opened={phase.kind !== "idle"} onClose={close} title={`${verb} dead letters`}>
        {phase.kind === "counted" && (
          <Stack>
            <Text>
              {phase.matched.toString()}
              {phase.more ? " or more" : ""} dead letters match the filter. {verb} them all?
              {action === BulkAction.DELETE && " Groups' blocked heads are skipped."}
            </Text>
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button color={action === BulkAction.DELETE ? "red" : undefined} disabled={phase.matched === 0n} onClick={() => run(phase.matched)} data-autofocus>
                {verb} {phase.matched.toString()}
              </Button>
            </Group>
          </Stack>
        )}
        {(phase.kind === "running" || phase.kind === "finished") && (
          <Stack>
            <Progress
              aria-label="Progress"
              value={phase.matched === 0n ? 100 : Math.min(100, (Number(phase.done + phase.skipped) / Number(phase.matched)) * 100)}
              animated={phase.kind === "running"}
            />
            <Text data-testid="bulk-progress">
              {verb === "Replay" ? "Replayed" : "Deleted"} {phase.done.toString()}, skipped {phase.skipped.toString()} of {phase.matched.toString()}
              {phase.kind === "finished" ? " — done." : "…"}
            </Text>
            {phase.lastError && <Text size="sm" c="red">Last refusal: {phase.lastError}</Text>}
            <ErrorAlert error={error} />
            {phase.kind === "finished" && <Button onClick={close}>Close</Button>}
          </Stack>
        )}
      </Modal>
    </>
  );
}
