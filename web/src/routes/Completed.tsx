import { Badge, Button, Checkbox, Group, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { Fragment, useEffect, useState, type FormEvent } from "react";
import { AttemptsTable } from "../components/AttemptsTable";
import { ErrorAlert } from "../components/ErrorAlert";
import { formatDuration, formatTime } from "../format";
import { useCompleted, useServerInfo } from "../hooks/queries";
import type { CompletedSearch } from "../router";
import { seesAll, useSession } from "../session";

const route = getRouteApi("/app/completed");

export function CompletedPage() {
  const { session } = useSession();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/completed" });
  const info = useServerInfo();
  const [pages, setPages] = useState<bigint[]>([0n]);
  useEffect(() => setPages([0n]), [JSON.stringify(search)]);
  const done = useCompleted({
    client: search.client ?? "",
    group: search.group ?? "",
    taskId: /^\d+$/.test(search.task ?? "") ? BigInt(search.task!) : 0n,
    failedOnly: search.failed ?? false,
    pageToken: pages[pages.length - 1],
    pageSize: 50,
  });
  const [open, setOpen] = useState<string>();
  const next = done.data?.nextPageToken ?? 0n;
  return (
    <Stack>
      <Title order={2}>Recently completed</Title>
      <Text size="sm" c="dimmed">
        Occurrences delivered or dead-lettered in the last {formatDuration(Number(info.data?.completedWindowMs ?? 0n))}, newest first, with
        every attempt. The server keeps them in memory.
      </Text>
      <CompletedFilters search={search} admin={seesAll(session)} onApply={(s) => navigate({ search: s })} />
      <ErrorAlert error={done.error} />
      <Table withTableBorder aria-label="Completed tasks">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Finished</Table.Th>
            <Table.Th>Task</Table.Th>
            <Table.Th>Client</Table.Th>
            <Table.Th>Group</Table.Th>
            <Table.Th>Outcome</Table.Th>
            <Table.Th>Attempts</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {done.data?.tasks.map((c) => {
            const key = c.seq.toString();
            return (
              <Fragment key={key}>
                <Table.Tr>
                  <Table.Td>{formatTime(c.finishedMs)}</Table.Td>
                  <Table.Td>
                    <Link to="/tasks/$taskId" params={{ taskId: c.task!.id.toString() }}>
                      {c.task?.id.toString()}
                    </Link>
                  </Table.Td>
                  <Table.Td>{c.task?.client}</Table.Td>
                  <Table.Td>{c.task?.group}</Table.Td>
                  <Table.Td>
                    {c.delivered ? (
                      <Badge color="green">delivered</Badge>
                    ) : (
                      <Link to="/dead-letters" search={{ client: c.task?.client, group: c.task?.group || undefined }}>
                        <Badge color="red">dead letter {c.deadLetterId.toString()}</Badge>
                      </Link>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Button size="compact-xs" variant="subtle" aria-expanded={open === key} onClick={() => setOpen(open === key ? undefined : key)}>
                      {c.attempts.length} attempt(s)
                    </Button>
                  </Table.Td>
                </Table.Tr>
                {open === key && (
                  <Table.Tr>
                    <Table.Td colSpan={6}>
                      <AttemptsTable attempts={c.attempts} />
                    </Table.Td>
                  </Table.Tr>
                )}
              </Fragment>
            );
          })}
        </Table.Tbody>
      </Table>
      {done.data?.tasks.length === 0 && <Text c="dimmed">Nothing completed in the window.</Text>}
      <Group>
        <Button size="xs" variant="default" disabled={pages.length === 1} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </Button>
        <Button size="xs" variant="default" disabled={next === 0n} onClick={() => setPages([...pages, next])}>
          Older
        </Button>
      </Group>
    </Stack>
  );
}

function CompletedFilters({ search, admin, onApply }: { search: CompletedSearch; admin: boolean; onApply: (s: CompletedSearch) => void }) {
  const [f, setF] = useState(search);
  useEffect(() => setF(search), [JSON.stringify(search)]); // by value: an equal new object is no change
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(Object.fromEntries(Object.entries(f).filter(([, v]) => v !== "" && v !== false)) as CompletedSearch);
  };
  return (
    <form onSubmit={submit} aria-label="Completed filters">
      <Group align="flex-end" gap="xs">
        {admin && <TextInput size="xs" label="Client" value={f.client ?? ""} onChange={(e) => setF({ ...f, client: e.currentTarget.value })} />}
        <TextInput size="xs" label="Group" value={f.group ?? ""} onChange={(e) => setF({ ...f, group: e.currentTarget.value })} />
        <TextInput size="xs" label="Task id" value={f.task ?? ""} onChange={(e) => setF({ ...f, task: e.currentTarget.value })} />
        <Checkbox label="Failed only" checked={f.failed ?? false} onChange={(e) => setF({ ...f, failed: e.currentTarget.checked })} />
        <Button size="xs" type="submit">
          Apply
        </Button>
      </Group>
    </form>
  );
}
