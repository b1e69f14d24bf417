import { join } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin, type UserConfig } from "vite";
import { CONSOLE_CSP_META } from "../shared/contracts/console-csp.ts";

// `npm run dev`: the Vite dev server with hot reload, proxying the API and the local-only
// endpoints to a running local Workcell (`npm start`; WORKCELL_URL to point elsewhere).
const workcell = process.env.WORKCELL_URL ?? "http://127.0.0.1:8080";
const proxied = ["/v1", "/openapi.json", "/config.json", "/local"];

/**
 * The built index.html carries the console's CSP as a <meta>, so a static host that sets
 * no headers still enforces it (docs/decisions/0103). Build only: the dev server's hot
 * reload needs an inline script.
 */
function cspMeta(): Plugin {
  return {
    name: "workcell-csp-meta",
    apply: "build",
    transformIndexHtml: () => [
      {
        tag: "meta",
        attrs: { "http-equiv": "Content-Security-Policy", content: CONSOLE_CSP_META },
        injectTo: "head-prepend",
      },
    ],
  };
}

/** The built SDK package (`npm run build:sdk`), as a user of @workcell/sdk gets it. */
export const DEFAULT_SDK_DIST = join(import.meta.dirname, "../sdk/dist");

/**
 * The console's build. It imports `@workcell/sdk`, resolved to the package's compiled
 * entry in `sdkDist` (not its sources): the console is a browser consumer of the package
 * like any other. Tests pass a dist of their own build.
 */
export function consoleViteConfig(sdkDist = DEFAULT_SDK_DIST): UserConfig {
  return {
    root: import.meta.dirname,
    plugins: [react(), cspMeta()],
    resolve: { alias: { "@workcell/sdk": join(sdkDist, "src/index.js") } },
    // One bundle of ~650 kB (React, Radix, Markdown): fine for a console loaded once.
    build: { outDir: "dist", emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
    server: {
      host: "127.0.0.1",
      proxy: Object.fromEntries(proxied.map((path) => [path, { target: workcell }])),
    },
  };
}

export default defineConfig(consoleViteConfig());
