import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { unsafeTreeEntries } from "./unsafe-tree-entries.ts";

// Runtime Assets (docs/architecture.md §3): the read-only tree built by
// infra/runtime-assets/build-runtime-assets.sh and mounted at /runtime in both tiers.
// At node start every file is checked against the build's checksums, and each asset
// runs its probe in a throw-away sandbox of the tree. An asset is ready only when all
// files of its own packages match and its probe printed what it should; a mismatch in
// a file no asset owns (libc, the loader) makes every asset not ready.

const HASH_CONCURRENCY = 8;

export type RuntimeAssetSpec = {
  name: string;
  /** The Debian packages whose files are this asset's own. */
  packages: readonly string[];
  /** argv run inside the tree (PATH = /runtime first) and the stdout it must print. */
  probe: readonly string[];
  expect: RegExp;
};

/** The assets an agent's tools reach for; the `bash` tool needs `bash`. */
export const RUNTIME_ASSETS: readonly RuntimeAssetSpec[] = [
  { name: "bash", packages: ["bash"], probe: ["bash", "-c", "echo $((6*7))"], expect: /^42\n$/ },
  {
    name: "coreutils",
    packages: ["coreutils"],
    probe: ["ls", "/runtime/usr/bin/ls"],
    expect: /ls/,
  },
  {
    name: "python3",
    packages: [
      "python3",
      "python3.11",
      "python3.11-minimal",
      "libpython3.11-stdlib",
      "libpython3.11-minimal",
    ],
    probe: ["python3", "-c", "import json, sys; print(json.dumps(sys.version_info[0]))"],
    expect: /^3\n$/,
  },
  {
    // The project's own Node (.node-version) from the npm registry, not Debian's 18: a
    // pseudo-package whose file list the build writes beside dpkg's (decision 0126).
    name: "node",
    packages: ["node-npm"],
    probe: ["node", "-e", "console.log(6*7, process.versions.node.split('.')[0])"],
    expect: /^42 24\n$/,
  },
  { name: "git", packages: ["git"], probe: ["git", "--version"], expect: /^git version / },
  {
    name: "findutils",
    packages: ["findutils"],
    probe: ["find", "/runtime/etc", "-maxdepth", "0"],
    expect: /^\/runtime\/etc\n$/,
  },
  {
    name: "grep",
    packages: ["grep"],
    probe: ["grep", "-c", "gem", "/runtime/etc/passwd"],
    expect: /^1\n$/,
  },
  { name: "sed", packages: ["sed"], probe: ["sed", "--version"], expect: /GNU sed/ },
  { name: "gawk", packages: ["gawk"], probe: ["gawk", "BEGIN { print 6*7 }"], expect: /^42\n$/ },
  { name: "ripgrep", packages: ["ripgrep"], probe: ["rg", "--version"], expect: /^ripgrep / },
  { name: "jq", packages: ["jq", "libjq1"], probe: ["jq", "-n", "6*7"], expect: /^42\n$/ },
  { name: "tar", packages: ["tar"], probe: ["tar", "--version"], expect: /GNU tar/ },
  { name: "unzip", packages: ["unzip"], probe: ["unzip", "-v"], expect: /UnZip/ },
  {
    name: "diffutils",
    packages: ["diffutils"],
    probe: ["diff", "--version"],
    expect: /GNU diffutils/,
  },
  { name: "patch", packages: ["patch"], probe: ["patch", "--version"], expect: /GNU patch/ },
  // The tools agents reach for once the egress proxy opens a network (issue #34).
  { name: "curl", packages: ["curl", "libcurl4"], probe: ["curl", "--version"], expect: /^curl / },
  { name: "socat", packages: ["socat"], probe: ["socat", "-V"], expect: /socat version/ },
  {
    name: "ssh",
    packages: ["openssh-client"],
    // Resolves its configuration for a name without connecting (`ssh -V` prints to stderr).
    probe: ["ssh", "-G", "probe.invalid"],
    expect: /^hostname probe\.invalid$/m,
  },
  {
    name: "pip",
    packages: ["python3-pip", "python3-pip-whl"],
    probe: ["python3", "-m", "pip", "--version"],
    expect: /^pip \d/,
  },
  {
    name: "venv",
    packages: ["python3.11-venv", "python3-venv"],
    // venv, and the pip wheel its `ensurepip` installs into a new environment, are there.
    probe: ["python3", "-c", "import ensurepip, venv; print(ensurepip.version())"],
    expect: /^\d+\.\d+/,
  },
];

const manifestSchema = z.object({
  version: z.string().min(1),
  key: z.string().min(1),
  packages: z.record(z.string(), z.string()),
});

export type RuntimeAssetStatus = { name: string; version: string; ready: boolean; reason?: string };

export type RuntimeAssetsReport = {
  /** The build's version (suite and key), or "missing". */
  version: string;
  assets: RuntimeAssetStatus[];
  /** Why verification itself failed (then `assets` is empty). */
  error?: string;
};

/**
 * Runs the probes of `assets` against the tree at `treeDir` laid out as at /runtime, in
 * a sandbox of one of the tiers; per asset, in order: undefined (passed) or why it failed.
 */
export type AssetProber = (
  treeDir: string,
  assets: readonly RuntimeAssetSpec[],
  signal: AbortSignal,
) => Promise<Array<string | undefined>>;

export type VerifyRuntimeAssetsInput = {
  /** The tree mounted at /runtime (RUNTIME_ASSETS_DIR): `<build>/tree`. */
  treeDir: string;
  /**
   * Where probes run: bubblewrap (bwrapAssetProber) or a throw-away container of the
   * sandbox image (containerAssetProber); absent: probes cannot run on this node.
   */
  prober?: AssetProber;
  signal: AbortSignal;
};

/** Checks checksums and runs probes; never throws for a broken tree, reports it. */
export async function verifyRuntimeAssets(
  input: VerifyRuntimeAssetsInput,
): Promise<RuntimeAssetsReport> {
  const buildDir = join(input.treeDir, "..");
  const notReady = (version: string, reason: string): RuntimeAssetsReport => ({
    version,
    assets: RUNTIME_ASSETS.map((a) => ({ name: a.name, version, ready: false, reason })),
  });
  const manifestText = await readFile(join(buildDir, "manifest.json"), "utf8").catch(
    () => undefined,
  );
  if (manifestText === undefined) {
    return notReady(
      "missing",
      `no Runtime Assets at ${input.treeDir}: build them with scripts/ensure-system.sh (infra/runtime-assets/build-runtime-assets.sh)`,
    );
  }
  const manifest = manifestSchema.safeParse(JSON.parse(manifestText));
  if (!manifest.success)
    return notReady("unknown", "manifest.json of the Runtime Assets is malformed: rebuild them");
  const { packages, version } = manifest.data;
  const unsafe = await unsafeTreeEntries(input.treeDir).catch((e: Error) => [
    `cannot be walked: ${e.message}`,
  ]);
  if (unsafe.length > 0) {
    return notReady(
      version,
      `the Runtime Assets tree must be root's with no setuid or setgid file; found ${unsafe.join(", ")}: rebuild it with infra/runtime-assets/build-runtime-assets.sh`,
    );
  }

  const mismatched = await mismatchedFiles(
    input.treeDir,
    join(buildDir, "files.sha256"),
    input.signal,
    join(buildDir, VERIFIED_STAMP),
  );
  const owners = await fileOwners(input.treeDir);
  const ownedByAsset = new Set(RUNTIME_ASSETS.flatMap((a) => a.packages));
  const sharedBroken = mismatched.filter((f) => !ownedByAsset.has(owners.get(f) ?? ""));

  const assets: RuntimeAssetStatus[] = [];
  // Assets whose files are intact get probed, all at once (a container prober starts one
  // container for them); their index in `assets` is where the probe's verdict goes.
  const toProbe: Array<{ spec: RuntimeAssetSpec; index: number }> = [];
  for (const asset of RUNTIME_ASSETS) {
    const assetVersion = packages[asset.packages[0] as string] ?? "absent";
    const status = (ready: boolean, reason?: string): RuntimeAssetStatus => ({
      name: asset.name,
      version: assetVersion,
      ready,
      ...(reason === undefined ? {} : { reason }),
    });
    if (assetVersion === "absent") {
      assets.push(status(false, `package ${asset.packages[0]} is not in the Runtime Assets`));
      continue;
    }
    const own = mismatched.filter((f) => asset.packages.includes(owners.get(f) ?? ""));
    const broken = [...own, ...sharedBroken];
    if (broken.length > 0) {
      assets.push(
        status(
          false,
          `checksum mismatch: ${broken.slice(0, 3).join(", ")}${broken.length > 3 ? ", …" : ""}`,
        ),
      );
      continue;
    }
    if (!input.prober) {
      assets.push(
        status(
          false,
          "the probe needs a sandbox tier on the node: bubblewrap (apt-get install -y bubblewrap) or the container tier",
        ),
      );
      continue;
    }
    toProbe.push({ spec: asset, index: assets.length });
    assets.push(status(false, "not probed"));
  }
  if (input.prober && toProbe.length > 0) {
    const verdicts = await input.prober(
      input.treeDir,
      toProbe.map((p) => p.spec),
      input.signal,
    );
    toProbe.forEach(({ index }, i) => {
      const asset = assets[index] as RuntimeAssetStatus;
      const reason = verdicts[i];
      assets[index] =
        reason === undefined
          ? { name: asset.name, version: asset.version, ready: true }
          : { ...asset, reason };
    });
  }
  return { version, assets };
}

/**
 * Where a full verification records each file's (inode, size, mtime): a later start whose
 * stats all match skips rehashing ~300 MB (any write, rename or replacement changes them);
 * anything else is hashed again. Written only after a verification found no mismatch.
 */
const VERIFIED_STAMP = "verified-stat.json";

type FileStat = [ino: number, size: number, mtimeMs: number];

async function statsOf(
  treeDir: string,
  paths: readonly string[],
): Promise<Record<string, FileStat>> {
  const out: Record<string, FileStat> = {};
  await Promise.all(
    paths.map(async (p) => {
      const s = await stat(join(treeDir, p)).catch(() => undefined);
      if (s) out[p] = [s.ino, s.size, s.mtimeMs];
    }),
  );
  return out;
}

/** Paths (relative to the tree) whose sha256 differs from the build's, or that vanished. */
async function mismatchedFiles(
  treeDir: string,
  sumsFile: string,
  signal: AbortSignal,
  stampFile: string,
): Promise<string[]> {
  const text = await readFile(sumsFile, "utf8").catch(() => "");
  const all = text
    .split("\n")
    .filter((l) => l.length > 66)
    .map((l) => ({ hash: l.slice(0, 64), path: l.slice(66) }));
  if (all.length === 0) return ["files.sha256"];
  const now = await statsOf(
    treeDir,
    all.map((e) => e.path),
  );
  const stamped = await readFile(stampFile, "utf8")
    .then((t) => JSON.parse(t) as Record<string, FileStat>)
    .catch((): Record<string, FileStat> => ({}));
  const same = (p: string) => {
    const a = now[p];
    const b = stamped[p];
    return a !== undefined && b !== undefined && a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
  };
  const entries = all.filter((e) => !same(e.path));
  const bad: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < entries.length) {
      signal.throwIfAborted();
      const entry = entries[next++] as { hash: string; path: string };
      const actual = await sha256(join(treeDir, entry.path)).catch(() => "");
      if (actual !== entry.hash) bad.push(entry.path);
    }
  };
  await Promise.all(Array.from({ length: HASH_CONCURRENCY }, worker));
  if (bad.length === 0 && entries.length > 0) {
    // Replaced, never written in place: a hard-linked copy of the build keeps its own.
    const temp = `${stampFile}.${process.pid}`;
    await writeFile(temp, JSON.stringify(now), { mode: 0o644 })
      .then(() => rename(temp, stampFile))
      .catch(() => {});
  }
  return bad.sort();
}

function sha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}

/**
 * tree-relative path → owning package, from dpkg's file lists (merged /usr folded in) and
 * the build's lists of what it took from the npm registry (var/lib/workcell/npm).
 */
async function fileOwners(treeDir: string): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  for (const dir of ["var/lib/dpkg/info", "var/lib/workcell/npm"]) {
    await readFileLists(join(treeDir, dir), owners);
  }
  return owners;
}

async function readFileLists(infoDir: string, owners: Map<string, string>): Promise<void> {
  for (const name of await readdir(infoDir).catch(() => [])) {
    if (!name.endsWith(".list")) continue;
    const pkg = name.slice(0, -".list".length).split(":")[0] as string;
    const text = await readFile(join(infoDir, name), "utf8").catch(() => "");
    for (const line of text.split("\n")) {
      if (!line.startsWith("/")) continue;
      const merged = /^\/(bin|sbin|lib|lib64)\//.test(line) ? `/usr${line}` : line;
      owners.set(merged.slice(1), pkg);
    }
  }
}
