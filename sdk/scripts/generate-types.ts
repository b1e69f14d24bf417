// `npm run sdk:generate`: writes sdk/openapi/workcell-api.json and the SDK's types
// (sdk/src/generated/api.ts) from the control plane's OpenAPI document. A unit test
// regenerates in memory and fails when the committed files drifted from the routes.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { generatedFiles } from "./generated-files.ts";

const root = join(import.meta.dirname, "..");
for (const file of await generatedFiles()) {
  const path = join(root, file.path);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, file.content);
  console.log(`wrote ${file.path}`);
}
