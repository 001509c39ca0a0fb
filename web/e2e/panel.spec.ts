import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { expect, test, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { BoomerangService, DispatchMode, Role } from "../src/gen/api/boomerang/v1/boomerang_pb";
import { adminPassword, startBoomerang, startReceiver, type Boomerang, type Receiver } from "./boomerang";

// One server and one receiver for the whole story, told in order.
test.describe.configure({ mode: "serial" });

let server: Boomerang;
let receiver: Receiver;
const shots = resolve(import.meta.dirname, "../screenshots");

test.beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  [server, receiver] = await Promise.all([startBoomerang(), startReceiver()]);
});

test.afterAll(async () => {
  await Promise.all([server?.stop(), receiver?.stop()]);
});

// Every page is watched for errors: uncaught exceptions and console
// errors. Chromium also logs each non-2xx response ("Failed to load
// resource"); the API answers some on purpose (a finished task is 404),
// so those network lines are not the panel's errors.
function watch(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(`console: ${m.text()}`);
  });
  return errors;
}

async function signIn(page: Page, client: string, password: string, path = "/ui/") {
  await page.goto(server.url + path);
  await page.getByLabel("Client id").fill(client);
  await page.getByRole("textbox", { name: "Password" }).fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("whoami")).toContainText(client);
}

const shot = (page: Page, name: string) => page.screenshot({ path: resolve(shots, `${name}.png`), fullPage: true });

// sdk is the Connect client an application would use, signed in as a client.
async function sdk(client: string, password: string) {
  let session = "";
  const api = createClient(
    BoomerangService,
    createConnectTransport({
      baseUrl: server.url,
      interceptors: [(next) => (req) => (req.header.set("Authorization", `Bearer ${session}`), next(req))],
    }),
  );
  session = (await api.login({ clientId: client, password })).sessionId;
  return api;
}

test("admin signs in and registers a client", async ({ page }) => {
  const errors = watch(page);
  await page.goto(server.url + "/ui/tasks?group=x");
  await expect(page).toHaveURL(/\/ui\/login\?redirect=/);
  await shot(page, "01-sign-in");
  await page.getByLabel("Client id").fill("admin");
  await page.getByRole("textbox", { name: "Password" }).fill(adminPassword);
  await page.getByRole("button", { name: "Sign in" }).click();
  // The deep link survives signing in.
  await expect(page).toHaveURL(/\/ui\/tasks\?group=x/);

  await page.getByRole("link", { name: "Clients" }).click();
  await page.getByRole("button", { name: "Register client" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Client id").fill("shop");
  await dialog.getByRole("textbox", { name: "Password" }).fill("shop-password");
  await dialog.getByLabel("Callback endpoint").fill(receiver.url);
  await dialog.getByRole("button", { name: "Register" }).click();
  await expect(page.getByTestId("signing-secret")).toHaveText(/^[0-9a-f]{32,}$/);
  await dialog.getByRole("button", { name: "Done" }).click();
  await expect(page.getByRole("table", { name: "Clients" })).toContainText("shop");
  await expect(page.getByRole("table", { name: "Dispatch pools" })).toContainText("default");
  const shop = page.getByRole("table", { name: "Clients" }).locator("tbody tr").filter({ hasText: "shop" });
  await shop.getByRole("button", { name: "Rotate secret" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click();
  await expect(page.getByRole("dialog", { name: "New signing secret of shop" })).toContainText(/[0-9a-f]{32,}/);
  await page.getByRole("dialog", { name: "New signing secret of shop" }).getByRole("button", { name: "Done" }).click();
  await shot(page, "02-clients");
  expect(errors).toEqual([]);
});

test("a client schedules through the panel and the SDK and watches them fire", async ({ page }) => {
  const errors = watch(page);
  await signIn(page, "shop", "shop-password");
  await expect(page).toHaveURL(/\/ui\/tasks/);
  await expect(page.getByRole("link", { name: "Clients" })).toHaveCount(0);

  await page.getByRole("button", { name: "New task" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Payload").fill('{"order": 1, "item": "book"}');
  await dialog.getByLabel("Group").fill("orders");
  await dialog.getByLabel("Delay (seconds)").fill("2");
  await dialog.getByRole("button", { name: "Schedule" }).click();
  await expect(page).toHaveURL(/\/ui\/tasks\/\d+$/);
  await expect(page.getByTestId("payload-json")).toContainText('"item": "book"');
  await shot(page, "03-task");
  await expect(page.getByRole("table", { name: "Attempts" })).toContainText("delivered");
  expect(receiver.delivered.some((d) => d.body.includes("book"))).toBe(true);

  const api = await sdk("shop", "shop-password");
  for (let i = 0; i < 5; i++) {
    await api.registerTask({ payload: new TextEncoder().encode(`{"sdk": ${i}}`), group: "later", when: { case: "delayMs", value: BigInt(60_000 * (i + 1)) } });
  }
  await api.registerTask({ payload: new TextEncoder().encode('{"sdk": "now"}'), group: "sdk" });
  await page.getByRole("link", { name: "Completed" }).click();
  await expect(page.getByRole("table", { name: "Completed tasks" })).toContainText("sdk");
  await page.getByRole("button", { name: /1 attempt/ }).first().click();
  await shot(page, "04-completed");

  await page.getByRole("link", { name: "Tasks" }).click();
  await page.getByLabel("Payload contains").fill('"sdk": 3');
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/payload=/);
  await expect(page.getByRole("table", { name: "Tasks" }).locator("tbody tr")).toHaveCount(1);
  await shot(page, "05-tasks");
  expect(errors).toEqual([]);
});

test("a failing receiver blocks a group; the panel unblocks it and replays dead letters in bulk", async ({ page }) => {
  const errors = watch(page);
  const api = await sdk("shop", "shop-password");
  receiver.failing.add("payments").add("mail");
  const once = { maxAttempts: 1 };
  await api.registerTask({ group: "payments", mode: DispatchMode.BLOCK_ON_ERROR, retry: once, payload: new TextEncoder().encode("charge 1") });
  await api.registerTask({ group: "payments", mode: DispatchMode.BLOCK_ON_ERROR, retry: once, payload: new TextEncoder().encode("charge 2") });
  for (let i = 0; i < 4; i++) {
    await api.registerTask({ group: "mail", retry: once, payload: new TextEncoder().encode(`mail ${i}`) });
  }

  await signIn(page, "shop", "shop-password", "/ui/groups");
  const groups = page.getByRole("table", { name: "Groups" });
  await expect(groups.locator("tbody tr").first()).toContainText("payments");
  await expect(groups.locator("tbody tr").first()).toContainText("HTTP 500");
  await shot(page, "06-groups-blocked");

  receiver.failing.clear();
  await groups.locator("tbody tr").first().getByRole("button", { name: "Unblock" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Unblock" }).click();
  // Unblocked, the group delivers both tasks; a drained group leaves the list.
  await expect(groups.locator("tbody tr").filter({ hasText: "payments" }).filter({ hasText: "blocked" })).toHaveCount(0);
  await expect(page.getByRole("table", { name: "Audit log" })).toContainText("UnblockGroup");
  await expect.poll(() => receiver.delivered.filter((d) => d.group === "payments").length).toBe(2);

  await page.getByRole("link", { name: "Dead letters" }).click();
  await page.getByLabel("Error contains").fill("HTTP 500");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByRole("table", { name: "Dead letters" }).locator("tbody tr")).toHaveCount(4);
  await shot(page, "07-dead-letters");
  await page.getByRole("button", { name: "Replay all matching…" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("4 dead letters match");
  await dialog.getByRole("button", { name: "Replay 4" }).click();
  await expect(page.getByTestId("bulk-progress")).toContainText("Replayed 4, skipped 0 of 4 — done.");
  await dialog.getByRole("button", { name: "Close" }).click();
  await expect(page.getByText("No dead letters match.")).toBeVisible();
  await expect.poll(() => receiver.delivered.filter((d) => d.group === "mail").length).toBe(4);
  expect(errors).toEqual([]);
});

test("admin sees the overview, the heat map, the cluster and the audit log", async ({ page }) => {
  const errors = watch(page);
  await signIn(page, "admin", adminPassword, "/ui/overview");
  await expect(page.getByTestId("counter-Delivered")).not.toHaveText("0");
  await expect(page.getByRole("figure", { name: "Per second" })).toBeVisible();
  const cell = page.getByRole("button", { name: /runs$/ }).first();
  await expect(cell).toBeVisible();
  await shot(page, "08-overview");
  await cell.click();
  await expect(page).toHaveURL(/\/ui\/tasks\?.*shard=/);
  await expect(page.getByRole("table", { name: "Tasks" }).locator("tbody tr").first()).toContainText("later");

  await page.getByRole("link", { name: "Cluster" }).click();
  await expect(page.getByRole("table", { name: "Nodes" })).toContainText("ready");
  await expect(page.getByText("shard 63")).toBeVisible();
  await shot(page, "09-cluster");

  await page.getByRole("link", { name: "Audit log" }).click();
  await expect(page.getByRole("table", { name: "Audit log" })).toContainText("BulkDeadLetters");
  await expect(page.getByRole("table", { name: "Audit log" })).toContainText("RegisterClient");
  await shot(page, "10-audit");

  // Keyboard: the navigation is reachable and works without a mouse.
  await page.getByRole("link", { name: "Groups" }).focus();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/\/ui\/groups/);
  expect(errors).toEqual([]);
});

test("a client sees only its own; a read-only client sees all and changes nothing", async ({ page }) => {
  const errors = watch(page);
  const admin = await sdk("admin", adminPassword);
  await admin.registerClient({ clientId: "viewer", password: "viewer-password", callback: { protocol: 1, endpoint: receiver.url } });
  await admin.registerClient({ clientId: "auditor", password: "auditor-password", role: Role.READ_ONLY });
  await signIn(page, "viewer", "viewer-password", "/ui/overview");
  await expect(page.getByText(/ask an admin/)).toBeVisible();
  await expect(page.getByRole("link", { name: "Clients" })).toHaveCount(0);
  await page.goto(server.url + "/ui/tasks");
  await expect(page.getByText("No tasks match.")).toBeVisible();
  await shot(page, "11-client-view");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/ui\/login/);

  // A blocked group for the read-only client to look at.
  const shop = await sdk("shop", "shop-password");
  receiver.failing.add("audit-me");
  await shop.registerTask({ group: "audit-me", mode: DispatchMode.BLOCK_ON_ERROR, retry: { maxAttempts: 1 } });
  await signIn(page, "auditor", "auditor-password", "/ui/groups");
  await expect(page.getByTestId("whoami")).toContainText("readonly");
  const groups = page.getByRole("table", { name: "Groups" });
  await expect(groups.locator("tbody tr").first()).toContainText("audit-me");
  await expect(groups.getByRole("button", { name: "Unblock" })).toHaveCount(0);
  await page.getByRole("link", { name: "Dead letters" }).click();
  await expect(page.getByRole("table", { name: "Dead letters" })).toContainText("audit-me");
  await expect(page.getByRole("button", { name: /all matching/ })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Replay" })).toHaveCount(0);
  await page.getByRole("link", { name: "Tasks" }).click();
  await expect(page.getByRole("button", { name: "New task" })).toHaveCount(0);
  await page.getByRole("link", { name: "Overview" }).click();
  await expect(page.getByTestId("counter-Blocked groups")).toHaveText("1");
  await shot(page, "12-read-only");
  // The server refuses its changes, whatever a client sends.
  const auditor = await sdk("auditor", "auditor-password");
  await expect(auditor.unblockGroup({ client: "shop", group: "audit-me" })).rejects.toThrow(/read-only/);
  await expect(auditor.bulkDeadLetters({ action: 1 })).rejects.toThrow(/read-only/);
  expect(errors).toEqual([]);
});

test("admin points a client at an ActiveMQ queue and back", async ({ page }) => {
  const errors = watch(page);
  await signIn(page, "admin", adminPassword, "/ui/clients");
  const row = page.getByRole("table", { name: "Clients" }).locator("tbody tr").filter({ hasText: "shop" });
  await row.getByRole("button", { name: "Edit" }).click();
  const dialog = page.getByRole("dialog", { name: "Edit client shop" });
  await dialog.getByLabel("Callback protocol").selectOption({ label: "ACTIVEMQ" });
  const endpoint = dialog.getByLabel("Callback endpoint (empty: none)");
  await endpoint.fill("activemq://127.0.0.1:61613/queue orders");
  await dialog.getByRole("button", { name: "Save" }).click();
  // The server checks the form of a queue callback, and the panel says why.
  await expect(dialog).toContainText("/queue/NAME");
  await endpoint.fill("activemq://127.0.0.1:61613/queue/orders");
  await dialog.getByRole("button", { name: "Save" }).click();
  await expect(dialog).toBeHidden();
  await expect(row).toContainText("activemq activemq://127.0.0.1:61613/queue/orders");
  await row.getByRole("button", { name: "Edit" }).click();
  await dialog.getByLabel("Callback protocol").selectOption({ label: "HTTP" });
  await endpoint.fill(receiver.url);
  await dialog.getByRole("button", { name: "Save" }).click();
  await expect(row).toContainText(`http ${receiver.url}`);
  expect(errors).toEqual([]);
});
