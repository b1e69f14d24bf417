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
