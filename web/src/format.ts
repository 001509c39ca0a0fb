// Formatting shared by the pages. Wire times are Unix milliseconds as
// bigint (int64); ids are bigint (uint64).

export const ms = (v: bigint | number): number => Number(v);

export function formatTime(v: bigint | number): string {
  const n = ms(v);
  if (n === 0) return "—";
  const d = new Date(n);
  const pad = (x: number, w = 2) => String(x).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// formatDuration shows milliseconds at a useful precision.
export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1) return `${(milliseconds * 1000).toFixed(0)} µs`;
  if (milliseconds < 1000) return `${milliseconds.toFixed(milliseconds < 10 ? 1 : 0)} ms`;
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(1)} s`;
  if (milliseconds < 3_600_000) return `${(milliseconds / 60_000).toFixed(1)} min`;
  return `${(milliseconds / 3_600_000).toFixed(1)} h`;
}

export function relative(v: bigint | number, now = Date.now()): string {
  const d = ms(v) - now;
  return d >= 0 ? `in ${formatDuration(d)}` : `${formatDuration(-d)} ago`;
}

// Payload views: text when it decodes as UTF-8, JSON when it parses, hex always.
export function payloadText(p: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(p);
  } catch {
    return undefined;
  }
}

export function payloadJSON(p: Uint8Array): string | undefined {
  const text = payloadText(p);
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return undefined;
  }
}

// hexDump shows 16 bytes a line: offset, hex, printable ASCII.
export function hexDump(p: Uint8Array, limit = 4096): string {
  const lines: string[] = [];
  for (let off = 0; off < Math.min(p.length, limit); off += 16) {
    const row = p.slice(off, off + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${off.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  if (p.length > limit) lines.push(`… ${p.length - limit} more bytes`);
  return lines.join("\n");
}

export const encodeText = (s: string): Uint8Array => new TextEncoder().encode(s);

// Inputs of type datetime-local speak local time without a zone.
export function toLocalInput(v: number): string {
  if (!v) return "";
  const d = new Date(v - new Date(v).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 19);
}

export function fromLocalInput(s: string): number {
  return s ? new Date(s).getTime() : 0;
}
