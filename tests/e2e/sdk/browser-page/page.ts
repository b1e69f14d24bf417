// The SDK package as a third-party site bundles it: `@workcell/sdk`, resolved to the built
// dist/ (sdk-browser.test.ts builds it; the type check maps it to dist/'s .d.ts). The test
// drives it through `globalThis.sdk` with page.evaluate, so every request is the browser's
// own (typed without the DOM lib: this file is checked with the Node sources).
import * as sdk from "@workcell/sdk";

export type PageGlobals = { sdk: typeof sdk };

(globalThis as unknown as PageGlobals).sdk = sdk;
