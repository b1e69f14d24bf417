import { execFile } from "node:child_process";
import { join } from "node:path";

/** Debian's python3 with python3-prometheus-client (scripts/ensure-system.sh installs it). */
const PYTHON = "/usr/bin/python3";
const PARSER = join(import.meta.dirname, "parse-exposition.py");

export type Sample = { name: string; labels: Record<string, string>; value: number | null };
/** One metric family, as prometheus_client.parser reads it (`counter` names lose `_total`). */
export type Family = { name: string; type: string; samples: Sample[] };

/** One scrape of a /metrics endpoint, parsed by Prometheus' reference parser. */
export type Scrape = {
  readonly families: readonly Family[];
  /**
   * The sum of the samples named `name` whose labels include `labels` (0 when none: a
   * labelled counter that never moved has no sample yet). For a histogram pass its base
   * name: its `_count` samples are summed (the number of observations).
   */
  value(name: string, labels?: Record<string, string>): number;
  /** Every sample named `name` (a counter's `..._total`, a histogram's `..._count`). */
  samples(name: string): Sample[];
};

/** GET `url` (the full /metrics URL), checked for status and content type, parsed. */
export async function scrapeMetrics(url: string): Promise<Scrape> {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status}`);
  const type = response.headers.get("content-type") ?? "";
  if (!type.startsWith("text/plain")) throw new Error(`GET ${url}: content type ${type}`);
  return parseScrape(await response.text());
}

export async function parseScrape(text: string): Promise<Scrape> {
  const families = await runParser(text);
  const all = families.flatMap((f) => f.samples);
  const histograms = new Set(families.filter((f) => f.type === "histogram").map((f) => f.name));
  const samples = (name: string) => all.filter((s) => s.name === name);
  return {
    families,
    samples,
    value(name, labels = {}) {
      const sampleName = histograms.has(name) ? `${name}_count` : name;
      return samples(sampleName)
        .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + (s.value ?? Number.NaN), 0);
    },
  };
}

function runParser(text: string): Promise<Family[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      PYTHON,
      [PARSER],
      { maxBuffer: 64 * 1024 * 1024, timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            new Error(
              `the exposition did not parse (${PYTHON} ${PARSER}; needs python3-prometheus-client): ${stderr || error.message}`,
            ),
          );
          return;
        }
        resolve(JSON.parse(stdout) as Family[]);
      },
    );
    child.stdin?.end(text);
  });
}

/** What moved between two scrapes: `after.value(...) - before.value(...)`. */
export function delta(
  before: Scrape,
  after: Scrape,
  name: string,
  labels?: Record<string, string>,
): number {
  return after.value(name, labels) - before.value(name, labels);
}
