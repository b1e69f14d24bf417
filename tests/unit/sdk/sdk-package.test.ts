import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { generatedFiles } from "../../../sdk/scripts/generated-files.ts";
import { ERROR_CLASSES, errorFromResponse, NotFoundError } from "../../../sdk/src/errors.ts";
import { ERROR_CODES } from "../../../shared/errors/error-catalogue.ts";

const SDK = join(import.meta.dirname, "../../../sdk");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("the SDK package", () => {
  test("the committed OpenAPI document and generated types match the routes", async () => {
    for (const file of await generatedFiles()) {
      expect(readFileSync(join(SDK, file.path), "utf8"), file.path).toBe(file.content);
    }
  });

  test("its browser entry imports nothing Node-only and nothing of the server", () => {
    const imports = sourceFiles(join(SDK, "src")).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map(
        (m) => [file.slice(SDK.length), m[1] ?? ""] as const,
      ),
    );
    expect(imports.length).toBeGreaterThan(10);
    const foreign = imports.filter(
      ([, spec]) =>
        !spec.startsWith("./") &&
        !spec.startsWith("../") &&
        !["openapi-fetch", "eventsource-parser/stream"].includes(spec),
    );
    expect(foreign).toEqual([]);
    // Relative imports stay inside src/ (no shared/ or functions/ of the server).
    expect(
      imports.filter(([, spec]) => spec.startsWith("../") && !spec.startsWith("../src")),
    ).toEqual([]);
  });

  test("its manifest: compiled entry with types first, a prepack build, only dist/ shipped", () => {
    const manifest = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8"));
    expect(Object.keys(manifest.exports["."])).toEqual(["types", "default"]);
    expect(manifest.exports["."]).toEqual({
      types: "./dist/src/index.d.ts",
      default: "./dist/src/index.js",
    });
    expect(manifest.bin).toEqual({ workcell: "dist/cli/workcell.js" });
    expect(manifest.files).toEqual(["dist", "openapi", "README.md", "CHANGELOG.md"]);
    expect(manifest.engines).toEqual({ node: ">=24" });
    expect(manifest.scripts.prepack).toBe("node scripts/build.ts");
    // The CHANGELOG has an entry for the version in the manifest.
    const changelog = readFileSync(join(SDK, "CHANGELOG.md"), "utf8");
    expect(changelog).toContain(`\n## ${manifest.version}\n`);
  });

  test("an error class for every catalogue code, chosen by the wire code", () => {
    for (const code of ERROR_CODES) expect(Object.keys(ERROR_CLASSES)).toContain(code);
    const error = errorFromResponse(
      new Response(null, { status: 404, headers: { "x-request-id": "req-1" } }),
      { error: { code: "not_found", message: "No such thread.", details: { reason: "x" } } },
    );
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ message: "No such thread.", requestId: "req-1", reason: "x" });
    // Not our error body (a proxy's page): the status picks the class, the message says why.
    const proxy = errorFromResponse(new Response(null, { status: 404 }), "<html>");
    expect(proxy).toBeInstanceOf(NotFoundError);
    expect(proxy.message).toMatch(/baseUrl/);
  });
});
