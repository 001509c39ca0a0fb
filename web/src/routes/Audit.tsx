import { Stack, Text, Title } from "@mantine/core";
import { AuditTable } from "../components/AuditTable";
import { ErrorAlert } from "../components/ErrorAlert";
import { useAuditLog } from "../hooks/queries";

export function AuditPage() {
  const log = useAuditLog(500);
  return (
    <Stack>
      <Title order={2}>Audit log</Title>
      <Text size="sm" c="dimmed">
        Operator actions on tasks, groups, dead letters and clients, newest first. The server keeps them in memory: the log starts empty at
        every restart.
      </Text>
      <ErrorAlert error={log.error} />
      <AuditTable entries={log.data?.entries ?? []} />
    </Stack>
  );
}
