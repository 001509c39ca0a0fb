import type { Socket } from "node:net";

/**
 * Returns a write function for socket that holds the frames written in one
 * tick and sends them together, so many small frames share a system call.
 */
export function batchWriter(socket: Socket): (frame: Uint8Array) => void {
  let corked = false;
  return (frame) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    }
    socket.write(frame);
  };
}
