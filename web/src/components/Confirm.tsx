import { Button, Group, Modal, Text } from "@mantine/core";
import { useState, type ReactNode } from "react";
import { ErrorAlert } from "./ErrorAlert";

// ConfirmButton asks before it acts, and shows the action's error.
export function ConfirmButton(props: {
  label: string;
  title: string;
  message: ReactNode;
  onConfirm: () => Promise<unknown>;
  color?: string;
  disabled?: boolean;
  size?: string;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onConfirm();
      setOpen(false);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button size={props.size ?? "xs"} variant="light" color={props.color} disabled={props.disabled} onClick={() => setOpen(true)}>
        {props.label}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={props.title}>
        <Text mb="md">{props.message}</Text>
        <ErrorAlert error={error} />
        <Group justify="flex-end" mt="md">
          <Button variant="default" onClick={() => setOpen(false)}>
            Cancel
          </Button>
          <Button color={props.color} loading={busy} onClick={run} data-autofocus>
            {props.label}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
