import { Badge, Table, Text } from "@mantine/core";
import { formatTime } from "../format";
import { Status, type AuditEntry } from "../gen/api/boomerang/v1/boomerang_pb";

// AuditTable lists operator actions: who did what, to what, when.
export function AuditTable({ entries }: { entries: AuditEntry[] }) {
  if (entries.length === 0) return <Text c="dimmed">No operator actions since the server started.</Text>;
  return (
    <Table striped withTableBorder aria-label="Audit log">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>When</Table.Th>
          <Table.Th>Who</Table.Th>
          <Table.Th>Action</Table.Th>
          <Table.Th>Client</Table.Th>
          <Table.Th>Target</Table.Th>
          <Table.Th>Result</Table.Th>
          <Table.Th>Detail</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {entries.map((e) => (
          <Table.Tr key={e.id.toString()}>
            <Table.Td>{formatTime(e.atMs)}</Table.Td>
            <Table.Td>{e.actor}</Table.Td>
            <Table.Td>{e.action}</Table.Td>
            <Table.Td>{e.client}</Table.Td>
            <Table.Td>{e.target}</Table.Td>
            <Table.Td>
              <Badge color={e.status === Status.OK ? "green" : "red"}>{Status[e.status]?.toLowerCase()}</Badge>
            </Table.Td>
            <Table.Td style={{ wordBreak: "break-word" }}>{e.detail}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
