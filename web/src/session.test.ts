import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LoginResponseSchema, Role } from "./gen/api/boomerang/v1/boomerang_pb";
import { canChange, roleOf, seesAll } from "./session";

describe("roles", () => {
  it("reads the role a login answered with", () => {
    expect(roleOf(create(LoginResponseSchema, { role: Role.READ_ONLY }))).toBe("readonly");
    expect(roleOf(create(LoginResponseSchema, { role: Role.ADMIN }))).toBe("admin");
    expect(roleOf(create(LoginResponseSchema, { role: Role.CLIENT }))).toBe("client");
    expect(roleOf(create(LoginResponseSchema, { admin: true }))).toBe("admin"); // a server without roles
  });
  it("lets a read-only session see all and change nothing", () => {
    const s = { id: "x", client: "auditor", role: "readonly" as const, expiresAtMs: 0 };
    expect(seesAll(s)).toBe(true);
    expect(canChange(s)).toBe(false);
    expect(seesAll({ ...s, role: "client" })).toBe(false);
    expect(canChange(undefined)).toBe(false);
  });
});
