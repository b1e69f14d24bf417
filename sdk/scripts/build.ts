// `npm run build` in sdk/ (and `prepack`): dist/ from the sources.
import { buildSdk } from "./build-package.ts";

try {
  const dir = await buildSdk();
  console.log(`built ${dir}`);
} catch (error) {
  const e = error as { stderr?: string; stdout?: string; message: string };
  process.stderr.write(`sdk build failed:\n${e.stdout ?? ""}${e.stderr ?? e.message}\n`);
  process.exitCode = 1;
}
