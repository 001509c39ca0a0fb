import { Alert, Badge, Card, SimpleGrid, Stack, Table, Text, Title } from "@mantine/core";
import { Link } from "@tanstack/react-router";
import { ErrorAlert } from "../components/ErrorAlert";
import { formatTime, relative } from "../format";
import { useCluster, useServerInfo } from "../hooks/queries";

export function ClusterPage() {
  const cluster = useCluster();
  const info = useServerInfo();
  const c = cluster.data;
  return (
    <Stack>
      <Title order={2}>Cluster</Title>
      <ErrorAlert error={cluster.error} />
      {c?.standalone && <Alert color="blue">A standalone node: it leads every shard alone.</Alert>}
      <Table withTableBorder aria-label="Nodes">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Node</Table.Th>
            <Table.Th>Health</Table.Th>
            <Table.Th>TCP</Table.Th>
            <Table.Th>HTTP</Table.Th>
            <Table.Th>Started</Table.Th>
            <Table.Th>Version</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {c?.nodes.map((n) => (
            <Table.Tr key={n.id}>
              <Table.Td>{n.id}</Table.Td>
              <Table.Td>
                <Badge color={n.healthy ? "green" : "red"}>{n.health}</Badge>
              </Table.Td>
              <Table.Td>{n.tcpAddress}</Table.Td>
              <Table.Td>{n.httpAddress}</Table.Td>
              <Table.Td title={formatTime(n.startedMs)}>{relative(n.startedMs)}</Table.Td>
              <Table.Td>{n.version}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {info.data && (
        <Text size="sm" c="dimmed">
          {info.data.partitions} partition loops; payloads up to {info.data.maxPayloadBytes.toString()} bytes.
        </Text>
      )}
      <Title order={3}>Shards</Title>
      {c?.system && (
        <Text size="sm" aria-label="System group">
          System group (clients and sessions): leader {c.system.leader || "unknown"} · voters{" "}
          {c.system.replicas.join(", ")}
          {c.system.learners.length > 0 && ` · learners ${c.system.learners.join(", ")}`}
        </Text>
      )}
      <SimpleGrid cols={{ base: 2, sm: 4, md: 8 }} spacing="xs">
        {c?.shards.map((s) => (
          <Card key={s.shard} withBorder padding={6}>
            <Text size="sm" fw={600}>
              <Link to="/tasks" search={{ shard: s.shard }}>
                shard {s.shard}
              </Link>
            </Text>
            <Text size="xs">leader {s.leader}</Text>
            <Text size="xs" c="dimmed">
              replicas {s.replicas.join(", ")}
              {s.learners.length > 0 && ` · learners ${s.learners.join(", ")}`} · partition {s.partition}
            </Text>
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}
