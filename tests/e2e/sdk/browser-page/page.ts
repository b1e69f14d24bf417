// The browser entry of the SDK, bundled as a third-party site would bundle it. The test
// drives it through `globalThis.sdk` with page.evaluate, so every request is the browser's
// own (typed without the DOM lib: this file is checked with the Node sources).
import * as sdk from "../../../../sdk/src/index.ts";

export type PageGlobals = { sdk: typeof sdk };

(globalThis as unknown as PageGlobals).sdk = sdk;
