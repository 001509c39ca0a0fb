import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { renderUI } from "../test-utils";
import { PayloadView } from "./PayloadView";

describe("PayloadView", () => {
  it("opens JSON pretty-printed and switches to hex", async () => {
    renderUI(<PayloadView payload={new TextEncoder().encode('{"order":7}')} />);
    expect(screen.getByTestId("payload-json")).toHaveTextContent('"order": 7');
    await userEvent.click(screen.getByRole("tab", { name: "Hex" }));
    expect(screen.getByTestId("payload-hex")).toHaveTextContent("7b 22 6f 72");
  });

  it("shows binary as hex only", () => {
    renderUI(<PayloadView payload={new Uint8Array([0, 255, 16])} />);
    expect(screen.getByRole("tab", { name: "JSON" })).toBeDisabled();
    expect(screen.getByRole("tab", { name: "Text" })).toBeDisabled();
    expect(screen.getByTestId("payload-hex")).toHaveTextContent("00 ff 10");
  });
});
