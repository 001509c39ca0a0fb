import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { Protocol } from "../gen/api/boomerang/v1/boomerang_pb";
import { renderUI } from "../test-utils";
import { CallbackFields } from "./CallbackFields";

function Editor() {
  const [protocol, setProtocol] = useState(String(Protocol.HTTP));
  const [endpoint, setEndpoint] = useState("");
  return <CallbackFields protocol={protocol} endpoint={endpoint} endpointLabel="Callback endpoint" onProtocol={setProtocol} onEndpoint={setEndpoint} />;
}

describe("CallbackFields", () => {
  it("offers every callback protocol, queue sinks included", () => {
    renderUI(<Editor />);
    const options = Array.from(screen.getByLabelText("Callback protocol").querySelectorAll("option"), (o) => o.textContent);
    expect(options).toEqual(["HTTP", "GRPC", "TCP", "UDP", "NATS", "AMQP", "ACTIVEMQ", "SQS"]);
  });

  it("shows the endpoint form of the chosen protocol", async () => {
    renderUI(<Editor />);
    await userEvent.selectOptions(screen.getByLabelText("Callback protocol"), String(Protocol.ACTIVEMQ));
    expect(screen.getByLabelText("Callback endpoint")).toHaveAttribute("placeholder", expect.stringMatching(/^activemq:\/\/.*\/queue\//));
    await userEvent.selectOptions(screen.getByLabelText("Callback protocol"), String(Protocol.SQS));
    expect(screen.getByLabelText("Callback endpoint")).toHaveAttribute("placeholder", expect.stringMatching(/^sqs:\/\/.*\.fifo$/));
  });
});
