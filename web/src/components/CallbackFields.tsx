import { NativeSelect, TextInput } from "@mantine/core";
import { Protocol } from "../gen/api/boomerang/v1/boomerang_pb";

// callbackExamples are the protocols a client's callback may use, each
// with an endpoint of the form the server accepts.
const callbackExamples: [Protocol, string][] = [
  [Protocol.HTTP, "https://orders.example.com/hook"],
  [Protocol.GRPC, "orders.example.com:9000"],
  [Protocol.TCP, "orders.example.com:9001"],
  [Protocol.UDP, "orders.example.com:9002"],
  [Protocol.NATS, "nats://nats.example.com:4222/orders.{group}"],
  [Protocol.AMQP, "amqp://user:pass@rabbit.example.com:5672/vhost?exchange=orders&routing_key={group}"],
  [Protocol.ACTIVEMQ, "activemq://user:pass@activemq.example.com:61613/queue/orders"],
  [Protocol.SQS, "sqs://eu-west-1/orders.fifo"],
];

const protocolChoices = callbackExamples.map(([p]) => ({ value: String(p), label: Protocol[p] }));

// CallbackFields edits a callback's protocol and endpoint; the endpoint's
// placeholder shows the form the chosen protocol takes.
export function CallbackFields(props: {
  protocol: string;
  endpoint: string;
  endpointLabel: string;
  onProtocol: (p: string) => void;
  onEndpoint: (e: string) => void;
}) {
  const example = callbackExamples.find(([p]) => String(p) === props.protocol)?.[1];
  return (
    <>
      <NativeSelect label="Callback protocol" data={protocolChoices} value={props.protocol} onChange={(e) => props.onProtocol(e.currentTarget.value)} />
      <TextInput label={props.endpointLabel} placeholder={example} value={props.endpoint} onChange={(e) => props.onEndpoint(e.currentTarget.value)} />
    </>
  );
}
