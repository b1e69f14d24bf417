import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import { describe, expect, test } from "vitest";

// The repository is its own map (docs/architecture.md, docs/api.md, docs/testing.md,
// docs/style.md, docs/decisions/): every place that cites a document must name one that is
// here, or a newcomer following the citation finds nothing (issue 33). Markdown links
// resolve from the file that holds them; a path written in code or prose
// (`docs/api.md "Runs"`, `docs/decisions/0037`) resolves from the repository root.

const ROOT = resolve(import.meta.dirname, "../../..");
const SKIPPED_DIRS = new Set([".git", ".tools", ".data", "node_modules", "dist", "coverage"]);
const TEXT_EXTENSIONS = new Set([".md", ".ts", ".tsx", ".js", ".mjs", ".sh", ".yaml", ".yml"]);
const TOP_DIRS = "docs|agent-host|functions|shared|infra|tests|sdk|web|scripts";

/** A repo-root path to a Markdown file, as code comments and prose cite one. */
const ROOT_PATH = new RegExp(String.raw`(?<![\w./-])((?:${TOP_DIRS})/[\w./-]*\.md)\b`, "g");
/** A decision cited by number without its title: `docs/decisions/0037`. */
const DECISION_NUMBER = /(?<![\w./-])docs\/decisions\/(\d{4})(?![\w-])/g;
/** A Markdown link's target: `[text](target)` or `[text](target "title")`. */
const MARKDOWN_LINK = /\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
/** The design documents' names from before they lived here, and their folder. */
const OUTSIDE_DESIGN = /(?<![\w./-])(?:ARCHITECTURE|API|TESTING|STYLE)\.md|shared\/design\//g;

/** Text files of the repository, except this one (its self-test cites broken paths). */
async function textFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) found.push(...(await textFiles(join(dir, entry.name))));
    } else if (entry.isFile() && TEXT_EXTENSIONS.has(extname(entry.name))) {
      const path = join(dir, entry.name);
      if (path !== import.meta.filename) found.push(path);
    }
  }
  return found;
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

const insideRoot = (path: string) => path === ROOT || path.startsWith(ROOT + sep);

/** Targets a file cites, each with the absolute path it must resolve to. */
function citations(file: string, text: string, decisions: string[]): Array<[string, string]> {
  const cited: Array<[string, string]> = [];
  if (file.endsWith(".md")) {
    // Code spans and fenced blocks show Markdown; they link nowhere.
    const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
    for (const [, target = ""] of prose.matchAll(MARKDOWN_LINK)) {
      if (/^[a-z][a-z0-9+.-]*:|^#/i.test(target)) continue; // a URL or an anchor here
      const path = target.replace(/[#?].*$/, "");
      cited.push([target, path.startsWith("/") ? join(ROOT, path) : resolve(dirname(file), path)]);
    }
  }
  for (const [, path = ""] of text.matchAll(ROOT_PATH)) cited.push([path, join(ROOT, path)]);
  for (const [whole, number] of text.matchAll(DECISION_NUMBER)) {
    const record = decisions.find((name) => name.startsWith(`${number}-`));
    cited.push([whole, join(ROOT, "docs/decisions", record ?? `${number}-(none)`)]);
  }
  return cited;
}

describe("every document the repository cites is in the repository", () => {
  test("Markdown links and cited doc paths resolve inside the repository", async () => {
    const decisions = await readdir(join(ROOT, "docs/decisions"));
    const broken: string[] = [];
    for (const file of await textFiles(ROOT)) {
      const text = await readFile(file, "utf8");
      for (const [target, path] of citations(file, text, decisions)) {
        if (!insideRoot(path) || !(await exists(path))) {
          broken.push(`${relative(ROOT, file)}: ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("nothing cites the design documents by their old names outside the repository", async () => {
    const stale: string[] = [];
    for (const file of await textFiles(ROOT)) {
      const text = await readFile(file, "utf8");
      for (const [name] of text.matchAll(OUTSIDE_DESIGN))
        stale.push(`${relative(ROOT, file)}: ${name}`);
    }
    // Cite docs/architecture.md, docs/api.md, docs/testing.md or docs/style.md instead.
    expect(stale).toEqual([]);
  });

  test("the checker sees a broken link, a stray path and an old name", () => {
    const file = join(ROOT, "docs/example.md");
    const text =
      "[gone](missing.md) [up](../../outside.md) docs/no-such.md docs/decisions/9999 [web](https://x.test/a.md) `[shown](in-code.md)`";
    const targets = citations(file, text, ["0001-node.md"]).map(([target, path]) => [
      target,
      insideRoot(path),
    ]);
    expect(targets).toEqual([
      ["missing.md", true],
      ["../../outside.md", false],
      ["docs/no-such.md", true],
      ["docs/decisions/9999", true],
    ]);
    expect("see ARCHITECTURE.md §4 and ../shared/design/".match(OUTSIDE_DESIGN)).toEqual([
      "ARCHITECTURE.md",
      "shared/design/",
    ]);
  });
});
