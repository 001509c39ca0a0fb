import { AppShell, Badge, Burger, Button, Group, NavLink, Text, Title } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { Link, Outlet, useRouterState } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { useApi, useServerInfo } from "../hooks/queries";
import { seesAll, useSession } from "../session";
import { RefreshMenu } from "./RefreshMenu";

const pages = [
  { to: "/overview", label: "Overview", all: true },
  { to: "/tasks", label: "Tasks" },
  { to: "/completed", label: "Completed" },
  { to: "/groups", label: "Groups" },
  { to: "/dead-letters", label: "Dead letters" },
  { to: "/audit", label: "Audit log" },
  { to: "/clients", label: "Clients", admin: true },
  { to: "/cluster", label: "Cluster", all: true },
] as const;

// Layout is every signed-in page's frame: navigation, refresh menu, who
// is signed in.
export function Layout() {
  const { session, signOut } = useSession();
  const [opened, { toggle }] = useDisclosure();
  const info = useServerInfo();
  const path = useRouterState({ select: (s) => s.location.pathname });
  const qc = useQueryClient();
  const api = useApi();
  const visible = pages.filter((p) => ("admin" in p ? session?.role === "admin" : "all" in p ? seesAll(session) : true));
  return (
    <AppShell header={{ height: 52 }} navbar={{ width: 190, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group gap="xs">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Navigation" />
            <Title order={4}>Boomerang</Title>
            <Text size="xs" c="dimmed">
              {info.data?.version}
            </Text>
          </Group>
          <Group gap="xs">
            <RefreshMenu minMs={Number(info.data?.minRefreshMs ?? 0n)} />
            <Badge variant="outline" data-testid="whoami">
              {session?.client} · {session?.role}
            </Badge>
            <Button
              size="xs"
              variant="default"
              onClick={async () => {
                // The server ends the session; signing out here goes on even if it cannot be reached.
                await api.logout({}).catch(() => undefined);
                qc.clear();
                signOut();
              }}
            >
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages">
        {visible.map((p) => (
          <NavLink key={p.to} component={Link} to={p.to} label={p.label} active={path.startsWith(p.to)} />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
