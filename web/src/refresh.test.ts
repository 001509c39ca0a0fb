import { describe, expect, it } from "vitest";
import { allowedChoices, clampInterval } from "./refresh";

describe("auto-refresh capped by the server", () => {
  it("offers only intervals at or above the server's minimum, and off", () => {
    expect(allowedChoices(5000)).toEqual([0, 5000, 10_000, 30_000, 60_000]);
  });
  it("moves a stored interval up to the minimum", () => {
    expect(clampInterval(1000, 5000)).toBe(5000);
    expect(clampInterval(0, 5000)).toBe(0);
    expect(clampInterval(30_000, 5000)).toBe(30_000);
  });
});
