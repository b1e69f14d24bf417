import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev`: the Vite dev server with hot reload, proxying the API and the local-only
// endpoints to a running local Workcell (`npm start`; WORKCELL_URL to point elsewhere).
const workcell = process.env.WORKCELL_URL ?? "http://127.0.0.1:8080";
const proxied = ["/v1", "/openapi.json", "/config.json", "/local"];

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  // One bundle of ~650 kB (React, Radix, Markdown): fine for a console loaded once.
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  server: {
    host: "127.0.0.1",
    proxy: Object.fromEntries(proxied.map((path) => [path, { target: workcell }])),
  },
});
