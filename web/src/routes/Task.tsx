import { Alert, Button, Card, Group, Modal, SimpleGrid, Stack, Text, TextInput, Textarea, Title } from "@mantine/core";
import { getRouteApi, Link } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { statusOf } from "../api";
import { AttemptsTable } from "../components/AttemptsTable";
import { ConfirmButton } from "../components/Confirm";
import { ErrorAlert } from "../components/ErrorAlert";
import { PayloadView } from "../components/PayloadView";
import { encodeText, formatDuration, formatTime, fromLocalInput, payloadText, relative, toLocalInput } from "../format";
import { DispatchMode, Status, type Task } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi, useCompleted, useTask, useTaskAttempts } from "../hooks/queries";
import { canChange, useSession } from "../session";
import { statusBadge } from "./Tasks";

const route = getRouteApi("/app/tasks/$taskId");

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm">{children}</Text>
    </div>
  );
}

export function TaskPage() {
  const { taskId } = route.useParams();
  const id = /^\d+$/.test(taskId) ? BigInt(taskId) : 0n;
  const task = useTask(id);
  const attempts = useTaskAttempts(id);
  const done = useCompleted({ taskId: id, pageSize: 20 });
  const { session } = useSession();
  const gone = statusOf(task.error) === Status.NOT_FOUND;
  const t = task.data?.task;
  return (
    <Stack>
      <Title order={2}>Task {taskId}</Title>
      {gone ? (
        <Alert color="gray">
          No such task now: it finished, was cancelled, or belongs to another client. Its recent outcomes, if any, are below.
        </Alert>
      ) : (
        <ErrorAlert error={task.error} />
      )}
      {t && (
        <Card withBorder>
          <SimpleGrid cols={{ base: 2, md: 4 }}>
            <Field label="Status">{statusBadge(t)}</Field>
            <Field label="Client">{t.client}</Field>
            <Field label="Group">
              {t.group ? (
                <Link to="/groups" search={{ client: t.client, contains: t.group }}>
                  {t.group}
                </Link>
              ) : (
                "—"
              )}
            </Field>
            <Field label="Mode">{DispatchMode[t.mode]?.toLowerCase()}</Field>
            <Field label="Due">
              {formatTime(t.fireAtMs)} ({relative(t.fireAtMs)})
            </Field>
            <Field label="Repeat">{t.repeatIntervalMs ? `every ${formatDuration(Number(t.repeatIntervalMs))}` : "once"}</Field>
            <Field label="Failed attempts">{t.attempts}</Field>
            <Field label="Next retry">{formatTime(t.nextAttemptMs)}</Field>
            <Field label="Fires so far">{t.fires.toString()}</Field>
            <Field label="Created">{formatTime(t.createdMs)}</Field>
            <Field label="Updated">{formatTime(t.updatedMs)}</Field>
            <Field label="Idempotency key">{t.idempotencyKey || "—"}</Field>
          </SimpleGrid>
          {t.lastError && (
            <Alert color="orange" mt="sm" title="Last error">
              {t.lastError}
            </Alert>
          )}
          {canChange(session) && <TaskActions task={t} />}
        </Card>
      )}
      {t && (
        <Card withBorder>
          <Title order={4}>Payload</Title>
          <PayloadView payload={t.payload} />
        </Card>
      )}
      <Title order={4}>Attempts</Title>
      <AttemptsTable attempts={attempts.data?.attempts ?? []} />
      <Title order={4}>Finished occurrences</Title>
      {done.data?.tasks.length ? (
        done.data.tasks.map((c) => (
          <Text key={c.seq.toString()} size="sm">
            {formatTime(c.finishedMs)}: {c.delivered ? "delivered" : `dead-lettered (${c.error})`} after {c.attempts.length} attempt(s)
          </Text>
        ))
      ) : (
        <Text c="dimmed" size="sm">
          None within the server's window.
        </Text>
      )}
    </Stack>
  );
}

function TaskActions({ task }: { task: Task }) {
  const api = useApi();
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries({ queryKey: ["task", task.id.toString()] });
  return (
    <Group mt="md">
      <ConfirmButton
        label="Fire now"
        title="Fire now"
        message="Make this task due now? It starts a new occurrence with fresh attempts."
        onConfirm={async () => {
          await api.updateTask({ id: task.id, when: { case: "delayMs", value: 0n } });
          await refresh();
        }}
      />
      <EditTask task={task} onDone={refresh} />
      <ConfirmButton
        label="Cancel task"
        color="red"
        title="Cancel task"
        message={`Cancel task ${task.id}? It will never fire again.`}
        onConfirm={async () => {
          await api.cancelTask({ id: task.id });
          await refresh();
        }}
      />
    </Group>
  );
}

function EditTask({ task, onDone }: { task: Task; onDone: () => Promise<unknown> }) {
  const api = useApi();
  const [open, setOpen] = useState(false);
  const [payload, setPayload] = useState("");
  const [due, setDue] = useState("");
  const [error, setError] = useState<unknown>();
  const text = payloadText(task.payload);
  const start = () => {
    setPayload(text ?? "");
    setDue(toLocalInput(Number(task.fireAtMs)));
    setError(undefined);
    setOpen(true);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      const at = fromLocalInput(due);
      await api.updateTask({
        id: task.id,
        payload: text !== undefined && payload !== text ? encodeText(payload) : undefined,
        when: at && at !== Number(task.fireAtMs) ? { case: "fireAtMs", value: BigInt(at) } : { case: undefined },
      });
      setOpen(false);
      await onDone();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <>
      <Button size="xs" variant="light" onClick={start}>
        Edit
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Edit task ${task.id}`}>
        <form onSubmit={submit}>
          <Stack>
            {text === undefined ? (
              <Text size="sm">The payload is binary: it cannot be edited here.</Text>
            ) : (
              <Textarea label="Payload" autosize minRows={4} value={payload} onChange={(e) => setPayload(e.currentTarget.value)} />
            )}
            <TextInput label="Due" type="datetime-local" step={1} value={due} onChange={(e) => setDue(e.currentTarget.value)} />
            <ErrorAlert error={error} />
            <Button type="submit">Save</Button>
          </Stack>
        </form>
      </Modal>
    </>
  );
}
