// The Boomerang SDK for Node.js: the raw TCP client (dial), the Connect
// client (WebClient), and receivers for HTTP webhooks (Node.js http,
// Express, Fastify, Fetch API) and raw TCP callbacks. See README.md.

export * from "./web.js";
export { Client, clientDefaults, dial, type ClientOptions } from "./client.js";
export { HTTPReceiver, type FastifyInstanceLike, type FastifyReplyLike, type FastifyRequestLike } from "./receive-http.js";
export { TCPReceiver, defaultReceiverInFlight, type TCPReceiverConfig } from "./receive-tcp.js";
