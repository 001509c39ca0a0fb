import { Alert, Badge, Button, Code, Group, Modal, Progress, NativeSelect, Stack, Table, Text, TextInput, PasswordInput, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { CallbackFields } from "../components/CallbackFields";
import { ConfirmButton } from "../components/Confirm";
import { ErrorAlert } from "../components/ErrorAlert";
import { formatTime } from "../format";
import { DispatchMode, Protocol, Role, type ClientConfig } from "../gen/api/boomerang/v1/boomerang_pb";
import { useApi, useClients, usePools } from "../hooks/queries";
import { useSession } from "../session";

export function ClientsPage() {
  const { session } = useSession();
  const clients = useClients();
  const pools = usePools();
  const api = useApi();
  const qc = useQueryClient();
  if (session?.role !== "admin") return <Alert>Only admins manage clients.</Alert>;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Clients</Title>
        <RegisterClient />
      </Group>
      <ErrorAlert error={clients.error} />
      <Table striped withTableBorder aria-label="Clients">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Id</Table.Th>
            <Table.Th>Role</Table.Th>
            <Table.Th>Callback</Table.Th>
            <Table.Th>Default mode</Table.Th>
            <Table.Th>Group limit</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {clients.data?.clients.map((c) => (
            <Table.Tr key={c.id}>
              <Table.Td>{c.id}</Table.Td>
              <Table.Td>
                <Badge variant={c.role === Role.CLIENT ? "outline" : "filled"}>{roleName(c.role, c.admin)}</Badge>
              </Table.Td>
              <Table.Td>{c.callback ? `${Protocol[c.callback.protocol]?.toLowerCase()} ${c.callback.endpoint}${c.callback.pool ? ` (pool ${c.callback.pool})` : ""}` : "—"}</Table.Td>
              <Table.Td>{DispatchMode[c.defaultMode]?.toLowerCase()}</Table.Td>
              <Table.Td>{c.groupLimit || "server default"}</Table.Td>
              <Table.Td>{formatTime(c.createdMs)}</Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  <EditClient client={c} />
                  <RotateSecret client={c} />
                  <ConfirmButton
                    label="Deregister"
                    color="red"
                    title="Deregister client"
                    message={`Remove client ${c.id} and end its sessions? A client with tasks is refused.`}
                    disabled={c.id === session.client}
                    onConfirm={async () => {
                      await api.deregisterClient({ clientId: c.id });
                      await qc.invalidateQueries({ queryKey: ["clients"] });
                    }}
                  />
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Title order={3}>Dispatch pools</Title>
      <ErrorAlert error={pools.error} />
      <Table withTableBorder aria-label="Dispatch pools">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Pool</Table.Th>
            <Table.Th>In use</Table.Th>
            <Table.Th w="30%">Saturation</Table.Th>
            <Table.Th>Queued</Table.Th>
            <Table.Th>Rate limit</Table.Th>
            <Table.Th>Rejected</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {pools.data?.pools.map((p) => (
            <Table.Tr key={p.name}>
              <Table.Td>{p.name || "default"}</Table.Td>
              <Table.Td>
                {p.inUse} / {p.maxConcurrent}
              </Table.Td>
              <Table.Td>
                <Progress aria-label={`pool ${p.name || "default"} saturation`} value={p.maxConcurrent ? (100 * p.inUse) / p.maxConcurrent : 0} />
              </Table.Td>
              <Table.Td>{p.queued}</Table.Td>
              <Table.Td>{p.maxPerSecond ? `${p.maxPerSecond}/s` : "none"}</Table.Td>
              <Table.Td>{p.rejected.toString()}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

function RegisterClient() {
  const api = useApi();
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [id, setId] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState(String(Role.CLIENT));
  const [protocol, setProtocol] = useState(String(Protocol.HTTP));
  const [endpoint, setEndpoint] = useState("");
  const [mode, setMode] = useState(String(DispatchMode.NEXT_ON_ERROR));
  const [secret, setSecret] = useState<string>();
  const [error, setError] = useState<unknown>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      const r = await api.registerClient({
        clientId: id,
        password,
        role: Number(role) as Role,
        callback: endpoint ? { protocol: Number(protocol) as Protocol, endpoint } : undefined,
        defaultMode: Number(mode) as DispatchMode,
      });
      setSecret(hex(r.signingSecret));
      await qc.invalidateQueries({ queryKey: ["clients"] });
    } catch (err) {
      setError(err);
    }
  };
  const close = () => {
    setOpen(false);
    setSecret(undefined);
    setId("");
    setPassword("");
    setEndpoint("");
  };
  return (
    <>
      <Button size="xs" onClick={() => setOpen(true)}>
        Register client
      </Button>
      <Modal opened={open} onClose={close} title="Register a client">
        {secret ? (
          <Stack>
            <Text>Client {id} is registered. Its webhook signing secret is shown this once:</Text>
            <Code block data-testid="signing-secret">
              {secret}
            </Code>
            <Button onClick={close}>Done</Button>
          </Stack>
        ) : (
          <form onSubmit={submit}>
            <Stack>
              <TextInput label="Client id" required value={id} onChange={(e) => setId(e.currentTarget.value)} data-autofocus />
              <PasswordInput label="Password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} />
              <NativeSelect label="Role" data={roleChoices} value={role} onChange={(e) => setRole(e.currentTarget.value)} />
              <CallbackFields protocol={protocol} endpoint={endpoint} endpointLabel="Callback endpoint" onProtocol={setProtocol} onEndpoint={setEndpoint} />
              <NativeSelect
                label="Default dispatch mode"
                data={[
                  { value: String(DispatchMode.NEXT_ON_ERROR), label: "next on error" },
                  { value: String(DispatchMode.BLOCK_ON_ERROR), label: "block on error" },
                  { value: String(DispatchMode.IMMEDIATE), label: "immediate" },
                ]}
                value={mode}
                onChange={(e) => setMode(e.currentTarget.value)}
                        />
              <ErrorAlert error={error} />
              <Button type="submit">Register</Button>
            </Stack>
          </form>
        )}
      </Modal>
    </>
  );
}

const roleChoices = [
  { value: String(Role.CLIENT), label: "client: its own tasks" },
  { value: String(Role.READ_ONLY), label: "read-only: sees all, changes nothing" },
  { value: String(Role.ADMIN), label: "admin: everything" },
];

function roleName(r: Role, admin: boolean): string {
  if (r === Role.READ_ONLY) return "read-only";
  return r === Role.ADMIN || admin ? "admin" : "client";
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

// EditClient changes a client's callback, default mode and role.
function EditClient({ client }: { client: ClientConfig }) {
  const api = useApi();
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [protocol, setProtocol] = useState(String(client.callback?.protocol ?? Protocol.HTTP));
  const [endpoint, setEndpoint] = useState(client.callback?.endpoint ?? "");
  const [mode, setMode] = useState(String(client.defaultMode || DispatchMode.NEXT_ON_ERROR));
  const [role, setRole] = useState(String(client.role || (client.admin ? Role.ADMIN : Role.CLIENT)));
  const [error, setError] = useState<unknown>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api.updateClient({
        clientId: client.id,
        callback: endpoint ? { protocol: Number(protocol) as Protocol, endpoint, timeoutMs: client.callback?.timeoutMs, pool: client.callback?.pool } : undefined,
        clearCallback: endpoint === "",
        defaultMode: Number(mode) as DispatchMode,
        role: Number(role) as Role,
      });
      setOpen(false);
      await qc.invalidateQueries({ queryKey: ["clients"] });
    } catch (err) {
      setError(err);
    }
  };
  return (
    <>
      <Button size="xs" variant="light" onClick={() => setOpen(true)}>
        Edit
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Edit client ${client.id}`}>
        <form onSubmit={submit}>
          <Stack>
            <CallbackFields protocol={protocol} endpoint={endpoint} endpointLabel="Callback endpoint (empty: none)" onProtocol={setProtocol} onEndpoint={setEndpoint} />
            <NativeSelect
              label="Default dispatch mode"
              data={[
                { value: String(DispatchMode.NEXT_ON_ERROR), label: "next on error" },
                { value: String(DispatchMode.BLOCK_ON_ERROR), label: "block on error" },
                { value: String(DispatchMode.IMMEDIATE), label: "immediate" },
              ]}
              value={mode}
              onChange={(e) => setMode(e.currentTarget.value)}
            />
            <NativeSelect label="Role (a change ends its sessions)" data={roleChoices} value={role} onChange={(e) => setRole(e.currentTarget.value)} />
            <ErrorAlert error={error} />
            <Button type="submit">Save</Button>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

// RotateSecret gives a client a new webhook signing secret; the old one
// keeps signing for a day, so receivers can switch over.
function RotateSecret({ client }: { client: ClientConfig }) {
  const api = useApi();
  const qc = useQueryClient();
  const [secret, setSecret] = useState<string>();
  return (
    <>
      <ConfirmButton
        label="Rotate secret"
        title="Rotate signing secret"
        message={`Give ${client.id} a new webhook signing secret? Webhooks carry signatures with both secrets for 24 hours.`}
        onConfirm={async () => {
          const r = await api.rotateSigningSecret({ clientId: client.id });
          setSecret(hex(r.signingSecret));
          await qc.invalidateQueries({ queryKey: ["clients"] });
        }}
      />
      <Modal opened={secret !== undefined} onClose={() => setSecret(undefined)} title={`New signing secret of ${client.id}`}>
        <Stack>
          <Text>It is shown this once:</Text>
          <Code block>{secret}</Code>
          <Button onClick={() => setSecret(undefined)}>Done</Button>
        </Stack>
      </Modal>
    </>
  );
}
