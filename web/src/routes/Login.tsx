import { Alert, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { useState, type FormEvent } from "react";
import { messageOf } from "../api";
import { useApi } from "../hooks/queries";
import { roleOf, useSession } from "../session";

const route = getRouteApi("/login");

export function LoginPage() {
  const api = useApi();
  const { signIn, reason } = useSession();
  const { redirect } = route.useSearch();
  const navigate = useNavigate();
  const [client, setClient] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await api.login({ clientId: client, password });
      signIn({ id: r.sessionId, client, role: roleOf(r), expiresAtMs: Number(r.expiresAtMs) });
      // The router's basepath is in redirect already: leave it out.
      const to = redirect && !redirect.startsWith("/login") ? redirect : "/";
      await navigate({ href: to, replace: true });
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Center h="100vh">
      <Paper withBorder p="xl" w={360} component="form" onSubmit={submit} aria-label="Sign in">
        <Stack>
          <Title order={3}>Boomerang</Title>
          {reason && <Alert color="yellow">{reason}</Alert>}
          <TextInput label="Client id" value={client} onChange={(e) => setClient(e.currentTarget.value)} required autoFocus autoComplete="username" />
          <PasswordInput label="Password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required autoComplete="current-password" />
          {error && (
            <Alert color="red" role="alert">
              {error}
            </Alert>
          )}
          <Button type="submit" loading={busy}>
            Sign in
          </Button>
        </Stack>
      </Paper>
    </Center>
  );
}
