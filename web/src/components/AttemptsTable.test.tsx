import { create } from "@bufbuild/protobuf";
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { AttemptSchema, Protocol } from "../gen/api/boomerang/v1/boomerang_pb";
import { renderUI } from "../test-utils";
import { AttemptsTable } from "./AttemptsTable";

describe("AttemptsTable", () => {
  it("shows each attempt's outcome, duration and error", () => {
    const attempts = [
      create(AttemptSchema, { attempt: 1, startedMs: 1n, durationMs: 12.5, ok: false, error: "HTTP 500", protocol: Protocol.HTTP }),
      create(AttemptSchema, { attempt: 2, startedMs: 2n, durationMs: 3, ok: true, protocol: Protocol.HTTP }),
      create(AttemptSchema, { attempt: 3, startedMs: 3n, running: true, protocol: Protocol.GRPC }),
    ];
    renderUI(<AttemptsTable attempts={attempts} />);
    const rows = screen.getAllByRole("row").slice(1);
    expect(within(rows[0]).getByText("failed")).toBeInTheDocument();
    expect(within(rows[0]).getByText("HTTP 500")).toBeInTheDocument();
    expect(within(rows[0]).getByText("13 ms")).toBeInTheDocument();
    expect(within(rows[1]).getByText("delivered")).toBeInTheDocument();
    expect(within(rows[2]).getByText("running")).toBeInTheDocument();
    expect(within(rows[2]).getByText("grpc")).toBeInTheDocument();
  });

  it("says when nothing is remembered", () => {
    renderUI(<AttemptsTable attempts={[]} />);
    expect(screen.getByText("No attempts remembered.")).toBeInTheDocument();
  });
});
