import { Badge, Button, Checkbox, Group, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { Link, getRouteApi, useNavigate } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { AuditTable } from "../components/AuditTable";
import { ConfirmButton } from "../components/Confirm";
import { ErrorAlert } from "../components/ErrorAlert";
import { formatTime, relative } from "../format";
import type { GroupSummary } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi, useAuditLog, useGroups } from "../hooks/queries";
import type { GroupsSearch } from "../router";
import { canChange, seesAll, useSession } from "../session";

const route = getRouteApi("/app/groups");

export function GroupsPage() {
  const { session } = useSession();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/groups" });
  const groups = useGroups({ client: search.client ?? "", groupContains: search.contains ?? "", blockedOnly: search.blocked ?? false });
  const audit = useAuditLog(20);
  const [f, setF] = useState(search);
  useEffect(() => setF(search), [JSON.stringify(search)]); // by value: an equal new object is no change
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate({ search: Object.fromEntries(Object.entries(f).filter(([, v]) => v !== "" && v !== false)) as GroupsSearch });
  };
  return (
    <Stack>
      <Title order={2}>Groups</Title>
      <Text size="sm" c="dimmed">
        Blocked groups first: a BLOCK_ON_ERROR task that failed for good holds its group until you unblock (deliver it again), skip (leave it
        dead-lettered and go on) or replay it.
      </Text>
      <form onSubmit={submit} aria-label="Group filters">
        <Group align="flex-end" gap="xs">
          {seesAll(session) && (
            <TextInput size="xs" label="Client" value={f.client ?? ""} onChange={(e) => setF({ ...f, client: e.currentTarget.value })} />
          )}
          <TextInput size="xs" label="Group contains" value={f.contains ?? ""} onChange={(e) => setF({ ...f, contains: e.currentTarget.value })} />
          <Checkbox label="Blocked only" checked={f.blocked ?? false} onChange={(e) => setF({ ...f, blocked: e.currentTarget.checked })} />
          <Button size="xs" type="submit">
            Apply
          </Button>
        </Group>
      </form>
      <ErrorAlert error={groups.error} />
      <Table withTableBorder striped aria-label="Groups">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Client</Table.Th>
            <Table.Th>Group</Table.Th>
            <Table.Th>Tasks waiting</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Blocking dead letter</Table.Th>
            <Table.Th>Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {groups.data?.groups.map((g) => (
            <GroupRow key={`${g.group?.client}\u0000${g.group?.group}`} g={g} canAct={canChange(session)} />
          ))}
        </Table.Tbody>
      </Table>
      {groups.data?.truncated && <Text size="sm">More groups match: narrow the filter.</Text>}
      {groups.data?.groups.length === 0 && <Text c="dimmed">No groups match.</Text>}
      <Title order={3}>Recent operator actions</Title>
      <AuditTable entries={audit.data?.entries ?? []} />
      <Link to="/audit">Full audit log</Link>
    </Stack>
  );
}

function GroupRow({ g, canAct }: { g: GroupSummary; canAct: boolean }) {
  const api = useApi();
  const qc = useQueryClient();
  const group = g.group!;
  const dl = g.blocking;
  const done = async () => {
    await qc.invalidateQueries({ queryKey: ["groups"] });
    await qc.invalidateQueries({ queryKey: ["audit"] });
  };
  const name = `group "${group.group}" of ${group.client}`;
  return (
    <Table.Tr>
      <Table.Td>{group.client}</Table.Td>
      <Table.Td>
        <Link to="/tasks" search={{ client: group.client, group: group.group }}>
          {group.group}
        </Link>
      </Table.Td>
      <Table.Td>{group.tasks.toString()}</Table.Td>
      <Table.Td>
        {group.blocked ? (
          <Badge color="red" title={formatTime(group.blockedSinceMs)}>
            blocked {relative(group.blockedSinceMs)}
          </Badge>
        ) : (
          <Badge color="green">flowing</Badge>
        )}
      </Table.Td>
      <Table.Td style={{ maxWidth: 320, wordBreak: "break-word" }}>
        {dl && (
          <>
            <Link to="/dead-letters" search={{ client: group.client, group: group.group }}>
              {dl.id.toString()}
            </Link>{" "}
            after {dl.attempts} attempt(s): <Text span c="red" size="sm">{dl.lastError}</Text>
          </>
        )}
      </Table.Td>
      <Table.Td>
        {group.blocked && canAct && (
          <Group gap={4}>
            <ConfirmButton
              label="Unblock"
              title="Unblock group"
              message={`Deliver the failed head of ${name} again, then let the group go on?`}
              onConfirm={async () => {
                await api.unblockGroup({ client: group.client, group: group.group });
                await done();
              }}
            />
            <ConfirmButton
              label="Skip"
              color="orange"
              title="Skip the failed task"
              message={`Leave the failed head of ${name} in the dead letter queue and let the group go on?`}
              onConfirm={async () => {
                await api.skipGroup({ client: group.client, group: group.group });
                await done();
              }}
            />
            {dl && (
              <ConfirmButton
                label="Replay"
                title="Replay the dead letter"
                message={`Replay dead letter ${dl.id} of ${name} with fresh attempts?`}
                onConfirm={async () => {
                  await api.replayDeadLetter({ id: dl.id });
                  await done();
                }}
              />
            )}
          </Group>
        )}
      </Table.Td>
    </Table.Tr>
  );
}
