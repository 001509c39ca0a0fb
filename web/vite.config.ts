import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The server serves the panel under a configurable path and puts a <base>
// in index.html, so every URL in the build is relative ("./").
export default defineConfig({
  base: "./",
  plugins: [
    react(),
    {
      // dist/.gitkeep lets the Go package embed dist/ before any build.
      name: "keep-dist",
      closeBundle() {
        writeFileSync(resolve(import.meta.dirname, "dist/.gitkeep"), "");
      },
    },
  ],
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 1500 },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test-setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    css: false,
  },
});
