import { Badge, Button, Group, Modal, NumberInput, NativeSelect, Stack, Table, Text, TextInput, Textarea, Title } from "@mantine/core";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { ConfirmButton } from "../components/Confirm";
import { ErrorAlert } from "../components/ErrorAlert";
import { encodeText, formatDuration, formatTime, fromLocalInput, relative, toLocalInput } from "../format";
import { DispatchMode, TaskOrder, TaskStatus, type Task } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi, useTasks } from "../hooks/queries";
import type { TasksSearch } from "../router";
import { canChange, seesAll, useSession } from "../session";

const route = getRouteApi("/app/tasks");
const pageSize = 50;

// request turns the page's search parameters into a ListTasks request.
export function tasksRequest(s: TasksSearch, cursor: { token: bigint; due: bigint }) {
  return {
    client: s.client ?? "",
    group: s.group ?? "",
    status: s.status === "scheduled" ? TaskStatus.SCHEDULED : s.status === "retrying" ? TaskStatus.RETRYING : TaskStatus.UNSPECIFIED,
    recurring: s.recurring === undefined ? undefined : s.recurring === "yes",
    dueFromMs: BigInt(s.dueFrom ?? 0),
    dueToMs: BigInt(s.dueTo ?? 0),
    payloadContains: s.payload ? encodeText(s.payload) : new Uint8Array(),
    shard: s.shard,
    order: s.order === "due" ? TaskOrder.DUE : TaskOrder.ID,
    pageToken: cursor.token,
    pageDueMs: cursor.due,
    pageSize,
  };
}

export function statusBadge(t: Task) {
  const name = TaskStatus[t.status] ?? "UNKNOWN";
  const color = { SCHEDULED: "gray", QUEUED: "blue", DELIVERING: "cyan", RETRYING: "orange", FINISHED: "green" }[name] ?? "gray";
  return <Badge color={color}>{name.toLowerCase()}</Badge>;
}

export function TasksPage() {
  const { session } = useSession();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/tasks" });
  const [cursors, setCursors] = useState<{ token: bigint; due: bigint }[]>([{ token: 0n, due: 0n }]);
  const cursor = cursors[cursors.length - 1];
  useEffect(() => setCursors([{ token: 0n, due: 0n }]), [JSON.stringify(search)]);
  const tasks = useTasks(tasksRequest(search, cursor));
  const next = tasks.data?.nextPageToken ?? 0n;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Tasks</Title>
        <Group>
          <FindById />
          {canChange(session) && <NewTask />}
        </Group>
      </Group>
      <TaskFilters search={search} admin={seesAll(session)} onApply={(s) => navigate({ search: s })} />
      <ErrorAlert error={tasks.error} />
      <Table striped highlightOnHover withTableBorder aria-label="Tasks">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Id</Table.Th>
            <Table.Th>Client</Table.Th>
            <Table.Th>Group</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Due</Table.Th>
            <Table.Th>Repeat</Table.Th>
            <Table.Th>Attempts</Table.Th>
            <Table.Th>Last error</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {tasks.data?.tasks.map((t) => (
            <Table.Tr key={t.id.toString()}>
              <Table.Td>
                <Link to="/tasks/$taskId" params={{ taskId: t.id.toString() }}>
                  {t.id.toString()}
                </Link>
              </Table.Td>
              <Table.Td>{t.client}</Table.Td>
              <Table.Td>{t.group}</Table.Td>
              <Table.Td>{statusBadge(t)}</Table.Td>
              <Table.Td title={relative(t.fireAtMs)}>{formatTime(t.fireAtMs)}</Table.Td>
              <Table.Td>{t.repeatIntervalMs ? formatDuration(Number(t.repeatIntervalMs)) : ""}</Table.Td>
              <Table.Td>{t.attempts}</Table.Td>
              <Table.Td style={{ maxWidth: 260, overflow: "hidden", textOverflow: "ellipsis" }}>{t.lastError}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {tasks.data?.tasks.length === 0 && <Text c="dimmed">No tasks match.</Text>}
      <Group>
        <Button variant="default" size="xs" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </Button>
        <Button
          variant="default"
          size="xs"
          disabled={next === 0n}
          onClick={() => setCursors([...cursors, { token: next, due: tasks.data?.nextPageDueMs ?? 0n }])}
        >
          Next page
        </Button>
        {canChange(session) && <CancelAll client={search.client} group={search.group} />}
      </Group>
    </Stack>
  );
}

function TaskFilters({ search, admin, onApply }: { search: TasksSearch; admin: boolean; onApply: (s: TasksSearch) => void }) {
  const [f, setF] = useState<TasksSearch>(search);
  useEffect(() => setF(search), [JSON.stringify(search)]); // by value: an equal new object is no change
  const set = (k: keyof TasksSearch, v: unknown) => setF((old) => ({ ...old, [k]: v === "" || v === null ? undefined : v }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(f);
  };
  return (
    <form onSubmit={submit} aria-label="Task filters">
      <Group align="flex-end" gap="xs">
        {admin && <TextInput size="xs" label="Client" value={f.client ?? ""} onChange={(e) => set("client", e.currentTarget.value)} />}
        <TextInput size="xs" label="Group" value={f.group ?? ""} onChange={(e) => set("group", e.currentTarget.value)} />
        <NativeSelect
          size="xs"
          label="Status"
          w={120}
          data={[
            { value: "", label: "any" },
            { value: "scheduled", label: "scheduled" },
            { value: "retrying", label: "retrying" },
          ]}
          value={f.status ?? ""}
          onChange={(e) => set("status", e.currentTarget.value)}
        />
        <NativeSelect
          size="xs"
          label="Recurring"
          w={100}
          data={[
            { value: "", label: "any" },
            { value: "yes", label: "yes" },
            { value: "no", label: "no" },
          ]}
          value={f.recurring ?? ""}
          onChange={(e) => set("recurring", e.currentTarget.value)}
        />
        <TextInput
          size="xs"
          type="datetime-local"
          step={1}
          label="Due from"
          value={toLocalInput(f.dueFrom ?? 0)}
          onChange={(e) => set("dueFrom", fromLocalInput(e.currentTarget.value))}
        />
        <TextInput
          size="xs"
          type="datetime-local"
          step={1}
          label="Due before"
          value={toLocalInput(f.dueTo ?? 0)}
          onChange={(e) => set("dueTo", fromLocalInput(e.currentTarget.value))}
        />
        <TextInput size="xs" label="Payload contains" value={f.payload ?? ""} onChange={(e) => set("payload", e.currentTarget.value)} />
        {admin && (
          <NumberInput size="xs" w={80} label="Shard" min={0} max={63} value={f.shard ?? ""} onChange={(v) => set("shard", typeof v === "number" ? v : undefined)} />
        )}
        <NativeSelect
          size="xs"
          label="Order"
          w={130}
          data={[
            { value: "id", label: "by id" },
            { value: "due", label: "by next run" },
          ]}
          value={f.order ?? "id"}
          onChange={(e) => set("order", e.currentTarget.value)}
        />
        <Button size="xs" type="submit">
          Apply
        </Button>
        <Button size="xs" variant="subtle" onClick={() => onApply({})}>
          Clear
        </Button>
      </Group>
    </form>
  );
}

function FindById() {
  const navigate = useNavigate();
  const [id, setId] = useState("");
  return (
    <form
      aria-label="Find a task by id"
      onSubmit={(e) => {
        e.preventDefault();
        if (/^\d+$/.test(id.trim())) void navigate({ to: "/tasks/$taskId", params: { taskId: id.trim() } });
      }}
    >
      <Group gap={4}>
        <TextInput size="xs" placeholder="Task id" aria-label="Task id" value={id} onChange={(e) => setId(e.currentTarget.value)} />
        <Button size="xs" type="submit" variant="default">
          Find
        </Button>
      </Group>
    </form>
  );
}

// NewTask schedules a task of the signed-in client.
function NewTask() {
  const api = useApi();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [payload, setPayload] = useState("");
  const [group, setGroup] = useState("");
  const [delay, setDelay] = useState<number>(0);
  const [interval, setIntervalMs] = useState<number>(0);
  const [mode, setMode] = useState<string>(String(DispatchMode.UNSPECIFIED));
  const [error, setError] = useState<unknown>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      const r = await api.registerTask({
        payload: encodeText(payload),
        group,
        when: { case: "delayMs", value: BigInt(Math.round(delay * 1000)) },
        repeatIntervalMs: BigInt(Math.round(interval * 1000)),
        mode: Number(mode) as DispatchMode,
      });
      setOpen(false);
      await qc.invalidateQueries({ queryKey: ["tasks"] });
      if (r.task) await navigate({ to: "/tasks/$taskId", params: { taskId: r.task.id.toString() } });
    } catch (err) {
      setError(err);
    }
  };
  return (
    <>
      <Button size="xs" onClick={() => setOpen(true)}>
        New task
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Schedule a task">
        <form onSubmit={submit}>
          <Stack>
            <Textarea label="Payload" autosize minRows={3} value={payload} onChange={(e) => setPayload(e.currentTarget.value)} data-autofocus />
            <TextInput label="Group" value={group} onChange={(e) => setGroup(e.currentTarget.value)} />
            <NumberInput label="Delay (seconds)" min={0} value={delay} onChange={(v) => setDelay(Number(v) || 0)} />
            <NumberInput label="Repeat every (seconds, 0 = once)" min={0} value={interval} onChange={(v) => setIntervalMs(Number(v) || 0)} />
            <NativeSelect
              label="Dispatch mode"
              data={[
                { value: String(DispatchMode.UNSPECIFIED), label: "client default" },
                { value: String(DispatchMode.NEXT_ON_ERROR), label: "next on error" },
                { value: String(DispatchMode.BLOCK_ON_ERROR), label: "block on error" },
                { value: String(DispatchMode.IMMEDIATE), label: "immediate" },
              ]}
              value={mode}
              onChange={(e) => setMode(e.currentTarget.value)}
                    />
            <ErrorAlert error={error} />
            <Button type="submit">Schedule</Button>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

// CancelAll cancels every task of a client or group, after a dry-run count.
function CancelAll({ client, group }: { client?: string; group?: string }) {
  const api = useApi();
  const qc = useQueryClient();
  const [count, setCount] = useState<bigint>();
  const target = group ? `group "${group}"` : "every group";
  return (
    <Group gap="xs">
      <Button size="xs" variant="subtle" color="red" onClick={async () => setCount((await api.cancelTasks({ client, group, dryRun: true })).matched)}>
        Count tasks to cancel
      </Button>
      {count !== undefined && (
        <ConfirmButton
          label={`Cancel ${count} tasks`}
          color="red"
          title="Cancel tasks"
          message={`Cancel all ${count} tasks of ${client || "your client"}, ${target}? Tasks being delivered are skipped.`}
          onConfirm={async () => {
            await api.cancelTasks({ client, group });
            setCount(undefined);
            await qc.invalidateQueries({ queryKey: ["tasks"] });
          }}
        />
      )}
    </Group>
  );
}
