import { Code, Tabs, Text } from "@mantine/core";
import { hexDump, payloadJSON, payloadText } from "../format";

// PayloadView shows a payload as JSON (pretty-printed), text and hex, and
// opens on the most readable one.
export function PayloadView({ payload }: { payload: Uint8Array }) {
  if (payload.length === 0) return <Text c="dimmed">Empty payload</Text>;
  const json = payloadJSON(payload);
  const text = payloadText(payload);
  const first = json !== undefined ? "json" : text !== undefined ? "text" : "hex";
  return (
    <Tabs defaultValue={first} keepMounted={false}>
      <Tabs.List>
        <Tabs.Tab value="json" disabled={json === undefined}>
          JSON
        </Tabs.Tab>
        <Tabs.Tab value="text" disabled={text === undefined}>
          Text
        </Tabs.Tab>
        <Tabs.Tab value="hex">Hex</Tabs.Tab>
      </Tabs.List>
      <Tabs.Panel value="json" pt="xs">
        <Code block data-testid="payload-json">{json}</Code>
      </Tabs.Panel>
      <Tabs.Panel value="text" pt="xs">
        <Code block style={{ whiteSpace: "pre-wrap" }}>{text}</Code>
      </Tabs.Panel>
      <Tabs.Panel value="hex" pt="xs">
        <Code block data-testid="payload-hex">{hexDump(payload)}</Code>
      </Tabs.Panel>
      <Text size="xs" c="dimmed" mt={4}>
        {payload.length} bytes
      </Text>
    </Tabs>
  );
}
