import "@mantine/core/styles.css";
import { MantineProvider } from "@mantine/core";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode, useMemo, useRef } from "react";
import { createRoot } from "react-dom/client";
import { apiBase, createApi, sessionEnded } from "./api";
import { ApiContext } from "./hooks/queries";
import { RefreshProvider } from "./refresh";
import { makeRouter } from "./router";
import { SessionProvider, loadSession, useSession } from "./session";

const router = makeRouter();

// App ties the API client, the query cache and the router to the session:
// a request that finds the session ended signs out, keeping the page.
function App() {
  const { session, signOut } = useSession();
  const current = useRef(session);
  current.current = session;
  const api = useMemo(() => createApi(apiBase(), () => current.current?.id), []);
  const client = useMemo(() => {
    const onError = (err: unknown) => {
      if (sessionEnded(err)) signOut("Your session ended. Sign in again.");
    };
    return new QueryClient({
      queryCache: new QueryCache({ onError }),
      mutationCache: new MutationCache({ onError }),
      defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false } },
    });
  }, [signOut]);
  return (
    <ApiContext.Provider value={api}>
      <QueryClientProvider client={client}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </ApiContext.Provider>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <MantineProvider>
      <SessionProvider initial={loadSession()}>
        <RefreshProvider>
          <App />
        </RefreshProvider>
      </SessionProvider>
    </MantineProvider>
  </StrictMode>,
);
