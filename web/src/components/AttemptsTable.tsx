import { Badge, Table, Text } from "@mantine/core";
import { Protocol, type Attempt } from "../gen/api/boomerang/v1/boomerang_pb";
import { formatDuration, formatTime } from "../format";

const protocolName = (p: Protocol) => Protocol[p]?.toLowerCase() ?? "—";

// AttemptsTable lists delivery attempts: when, how long, how it ended.
export function AttemptsTable({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <Text c="dimmed">No attempts remembered.</Text>;
  return (
    <Table striped withTableBorder aria-label="Attempts">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>#</Table.Th>
          <Table.Th>Started</Table.Th>
          <Table.Th>Duration</Table.Th>
          <Table.Th>Protocol</Table.Th>
          <Table.Th>Outcome</Table.Th>
          <Table.Th>Error</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {attempts.map((a, i) => (
          <Table.Tr key={i}>
            <Table.Td>{a.attempt}</Table.Td>
            <Table.Td>{formatTime(a.startedMs)}</Table.Td>
            <Table.Td>{a.running ? "—" : formatDuration(a.durationMs)}</Table.Td>
            <Table.Td>{protocolName(a.protocol)}</Table.Td>
            <Table.Td>
              {a.running ? <Badge color="blue">running</Badge> : a.ok ? <Badge color="green">delivered</Badge> : <Badge color="red">failed</Badge>}
            </Table.Td>
            <Table.Td style={{ wordBreak: "break-word" }}>{a.error}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
