import { Badge, Button, Group, Modal, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { BulkDeadLetterButton, type DeadLetterFilter } from "../components/BulkAction";
import { ConfirmButton } from "../components/Confirm";
import { ErrorAlert } from "../components/ErrorAlert";
import { PayloadView } from "../components/PayloadView";
import { encodeText, formatTime, fromLocalInput, toLocalInput } from "../format";
import { BulkAction, type DeadLetter } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi, useDeadLetters } from "../hooks/queries";
import type { DeadLettersSearch } from "../router";
import { canChange, seesAll, useSession } from "../session";

const route = getRouteApi("/app/dead-letters");

export function filterOf(s: DeadLettersSearch): DeadLetterFilter {
  return {
    client: s.client ?? "",
    group: s.group ?? "",
    errorContains: s.error ?? "",
    payloadContains: s.payload ? encodeText(s.payload) : new Uint8Array(),
    failedBeforeMs: BigInt(s.failedBefore ?? 0),
  };
}

export function DeadLettersPage() {
  const { session } = useSession();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/dead-letters" });
  const qc = useQueryClient();
  const [pages, setPages] = useState<bigint[]>([0n]);
  useEffect(() => setPages([0n]), [JSON.stringify(search)]);
  const filter = filterOf(search);
  const list = useDeadLetters({ ...filter, pageToken: pages[pages.length - 1], pageSize: 50 });
  const [shown, setShown] = useState<DeadLetter>();
  const next = list.data?.nextPageToken ?? 0n;
  const refresh = () => void qc.invalidateQueries({ queryKey: ["deadLetters"] });
  return (
    <Stack>
      <Title order={2}>Dead letters</Title>
      <DeadLetterFilters search={search} admin={seesAll(session)} onApply={(s) => navigate({ search: s })} />
      {canChange(session) && (
        <Group>
          <BulkDeadLetterButton action={BulkAction.REPLAY} filter={filter} onDone={refresh} />
          <BulkDeadLetterButton action={BulkAction.DELETE} filter={filter} onDone={refresh} />
        </Group>
      )}
      <ErrorAlert error={list.error} />
      <Table striped withTableBorder highlightOnHover aria-label="Dead letters">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Id</Table.Th>
            <Table.Th>Task</Table.Th>
            <Table.Th>Client</Table.Th>
            <Table.Th>Group</Table.Th>
            <Table.Th>Failed</Table.Th>
            <Table.Th>Attempts</Table.Th>
            <Table.Th>Error</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.data?.deadLetters.map((d) => (
            <Table.Tr key={d.id.toString()}>
              <Table.Td>
                <Button size="compact-xs" variant="subtle" onClick={() => setShown(d)}>
                  {d.id.toString()}
                </Button>
              </Table.Td>
              <Table.Td>{d.task?.id.toString()}</Table.Td>
              <Table.Td>{d.task?.client}</Table.Td>
              <Table.Td>
                {d.task?.group}
                {d.blocksGroup && (
                  <Badge ml={4} color="red" size="xs">
                    blocks group
                  </Badge>
                )}
              </Table.Td>
              <Table.Td>{formatTime(d.failedMs)}</Table.Td>
              <Table.Td>{d.attempts}</Table.Td>
              <Table.Td style={{ maxWidth: 300, wordBreak: "break-word" }}>{d.lastError}</Table.Td>
              <Table.Td>{canChange(session) && <DeadLetterActions d={d} onDone={refresh} />}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {list.data?.deadLetters.length === 0 && <Text c="dimmed">No dead letters match.</Text>}
      <Group>
        <Button size="xs" variant="default" disabled={pages.length === 1} onClick={() => setPages(pages.slice(0, -1))}>
          Previous page
        </Button>
        <Button size="xs" variant="default" disabled={next === 0n} onClick={() => setPages([...pages, next])}>
          Next page
        </Button>
      </Group>
      <Modal opened={shown !== undefined} onClose={() => setShown(undefined)} title={`Dead letter ${shown?.id ?? ""}`} size="lg">
        {shown && (
          <Stack>
            <Text size="sm">
              Task{" "}
              <Link to="/completed" search={{ task: shown.task?.id.toString() }}>
                {shown.task?.id.toString()}
              </Link>{" "}
              of {shown.task?.client}, failed {formatTime(shown.failedMs)} after {shown.attempts} attempt(s): {shown.lastError}
            </Text>
            <PayloadView payload={shown.task?.payload ?? new Uint8Array()} />
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

function DeadLetterActions({ d, onDone }: { d: DeadLetter; onDone: () => void }) {
  const api = useApi();
  return (
    <Group gap={4} wrap="nowrap">
      <ConfirmButton
        label="Replay"
        title="Replay dead letter"
        message={`Deliver dead letter ${d.id} again with fresh attempts?`}
        onConfirm={async () => {
          await api.replayDeadLetter({ id: d.id });
          onDone();
        }}
      />
      <ConfirmButton
        label="Delete"
        color="red"
        title="Delete dead letter"
        message={d.blocksGroup ? `Dead letter ${d.id} blocks its group: deleting it lets the group go on.` : `Delete dead letter ${d.id}?`}
        onConfirm={async () => {
          await api.deleteDeadLetter({ id: d.id });
          onDone();
        }}
      />
    </Group>
  );
}

function DeadLetterFilters({ search, admin, onApply }: { search: DeadLettersSearch; admin: boolean; onApply: (s: DeadLettersSearch) => void }) {
  const [f, setF] = useState(search);
  useEffect(() => setF(search), [JSON.stringify(search)]); // by value: an equal new object is no change
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(Object.fromEntries(Object.entries(f).filter(([, v]) => v !== "" && v !== 0)) as DeadLettersSearch);
  };
  return (
    <form onSubmit={submit} aria-label="Dead letter filters">
      <Group align="flex-end" gap="xs">
        {admin && <TextInput size="xs" label="Client" value={f.client ?? ""} onChange={(e) => setF({ ...f, client: e.currentTarget.value })} />}
        <TextInput size="xs" label="Group" value={f.group ?? ""} onChange={(e) => setF({ ...f, group: e.currentTarget.value })} />
        <TextInput size="xs" label="Error contains" value={f.error ?? ""} onChange={(e) => setF({ ...f, error: e.currentTarget.value })} />
        <TextInput size="xs" label="Payload contains" value={f.payload ?? ""} onChange={(e) => setF({ ...f, payload: e.currentTarget.value })} />
        <TextInput
          size="xs"
          type="datetime-local"
          step={1}
          label="Failed before"
          value={toLocalInput(f.failedBefore ?? 0)}
          onChange={(e) => setF({ ...f, failedBefore: fromLocalInput(e.currentTarget.value) })}
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
