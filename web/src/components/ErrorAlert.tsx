import { Alert } from "@mantine/core";
import { messageOf } from "../api";

export function ErrorAlert({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <Alert color="red" title="Request failed" role="alert">
      {messageOf(error)}
    </Alert>
  );
}
