import { MantineProvider } from "@mantine/core";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import type { Api } from "./api";
import { ApiContext } from "./hooks/queries";

// renderUI renders inside the providers the panel's components expect.
export function renderUI(ui: ReactNode, api?: Partial<Api>) {
  return render(
    <MantineProvider>
      <ApiContext.Provider value={api as Api}>{ui}</ApiContext.Provider>
    </MantineProvider>,
  );
}
