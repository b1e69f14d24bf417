import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmod, chown, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapAssetProber } from "../../../agent-host/runtime/bwrap-asset-prober.ts";
import {
  containerAssetProber,
  PROBE_LABEL,
} from "../../../agent-host/runtime/container-asset-prober.ts";
import { verifyRuntimeAssets } from "../../../agent-host/runtime/runtime-assets.ts";
import { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig, uniqueNodeId } from "./sandbox-fixture.ts";

// The Runtime Assets as built by scripts/ensure-system.sh (infra/runtime-assets/): real
// bash, Python, Node and git in both tiers, and a corrupted asset reported not ready.

const treeDir = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
const signal = () => AbortSignal.timeout(120_000);

async function requireAssets(): Promise<{ key: string }> {
  const manifest = await readFile(join(treeDir, "../manifest.json"), "utf8").catch(() => {
    throw new Error(
      `the Runtime Assets are not built at ${treeDir}: run scripts/ensure-system.sh (infra/runtime-assets/build-runtime-assets.sh)`,
    );
  });
  return JSON.parse(manifest) as { key: string };
}

/** Verifies the tree at `dir` with probes in bubblewrap (the process tier's way). */
const verifyWithBwrap = (dir: string) =>
  verifyRuntimeAssets({
    treeDir: dir,
    prober: bwrapAssetProber("/usr/bin/bwrap"),
    signal: signal(),
  });

describe("Runtime Assets", () => {
  it("verifies every asset of the built tree: checksums match and probes pass", async () => {
    await requireAssets();
    const report = await verifyWithBwrap(treeDir);
    expect(report.assets.filter((a) => !a.ready)).toEqual([]);
    expect(report.assets.map((a) => a.name)).toEqual(
      expect.arrayContaining([
        "bash",
        "python3",
        "node",
        "git",
        "ripgrep",
        "jq",
        "curl",
        "socat",
        "ssh",
        "pip",
        "venv",
      ]),
    );
  });

  it("reports an asset whose file was altered not ready, with the reason, and the others ready", async () => {
    await requireAssets();
    // `current` is a symlink: copy the build it points at.
    const build = await realpath(join(treeDir, ".."));
    const copy = join(build, `../.corrupt-${randomUUID()}`);
    try {
      // A hard-linked copy of the build, then one file replaced (not written through the link).
      execFileSync("cp", ["-al", build, copy]);
      const jq = join(copy, "tree/usr/bin/jq");
      const bytes = await readFile(jq);
      bytes.writeUInt8((bytes.at(-1) ?? 0) ^ 0xff, bytes.length - 1);
      await rm(jq);
      await writeFile(jq, bytes, { mode: 0o755 });
      const report = await verifyWithBwrap(join(copy, "tree"));
      const jqStatus = report.assets.find((a) => a.name === "jq");
      expect(jqStatus).toMatchObject({
        ready: false,
        reason: expect.stringMatching(/checksum mismatch: usr\/bin\/jq/),
      });
      expect(report.assets.find((a) => a.name === "python3")?.ready).toBe(true);
      // The build itself is untouched.
      expect((await stat(join(treeDir, "usr/bin/jq"))).size).toBe(bytes.length);
      const original = await readFile(join(treeDir, "usr/bin/jq"));
      expect(original.equals(bytes)).toBe(false);
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  // Issue 37 item 9: tree/home/gem was host uid 1000's and su/newgrp kept their setuid
  // bits (inert only because of nosuid and no-new-privs). `find` checks the build, not
  // the verifier under test.
  it("is root's entirely, with no setuid or setgid file, in the tree and in its image", async () => {
    const { key } = await requireAssets();
    const unsafe = ["(", "!", "-uid", "0", "-o", "!", "-gid", "0", "-o"];
    const setid = ["-type", "f", "-perm", "/6000", ")", "-print"];
    expect(
      execFileSync("find", [treeDir, "-xdev", ...unsafe, ...setid], { encoding: "utf8" }),
    ).toBe("");
    const docker = new Docker();
    const container = await docker.createContainer({
      Image: `workcell-sandbox:${key}`,
      Cmd: ["find", "/", "-xdev", ...unsafe, ...setid],
      User: "0:0",
      NetworkDisabled: true,
      Labels: { [PROBE_LABEL]: uniqueNodeId() },
    });
    try {
      await container.start();
      expect((await container.wait()).StatusCode).toBe(0);
      const logs = await container.logs({ stdout: true, stderr: true });
      // Multiplexed frames: an empty log is an empty buffer.
      expect(logs.length).toBe(0);
    } finally {
      await container.remove({ force: true });
    }
  });

  it("reports every asset not ready for a tree with an entry not root's or a setuid file, naming them; the build is untouched", async () => {
    await requireAssets();
    const build = await realpath(join(treeDir, ".."));
    const copy = join(build, `../.unsafe-${randomUUID()}`);
    try {
      // Directories of a `cp -al` copy are its own; files are replaced, never changed
      // through the shared inode.
      execFileSync("cp", ["-al", build, copy]);
      await chown(join(copy, "tree/home/gem"), 1000, 1000);
      const su = join(copy, "tree/usr/bin/su");
      const bytes = await readFile(su);
      await rm(su);
      await writeFile(su, bytes);
      await chmod(su, 0o4755);
      const report = await verifyWithBwrap(join(copy, "tree"));
      expect(report.assets.length).toBeGreaterThan(0);
      for (const asset of report.assets) {
        expect(asset.ready).toBe(false);
        expect(asset.reason).toContain("home/gem (owned by 1000:1000)");
        expect(asset.reason).toContain("usr/bin/su (mode 4755)");
      }
      const original = await stat(join(treeDir, "usr/bin/su"));
      expect(original.mode & 0o6000).toBe(0);
      expect((await stat(join(treeDir, "home/gem"))).uid).toBe(0);
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it("reports every asset not ready when the tree is missing", async () => {
    const report = await verifyWithBwrap("/nonexistent/tree");
    expect(report.version).toBe("missing");
    expect(
      report.assets.every((a) => !a.ready && /scripts\/ensure-system\.sh/.test(a.reason ?? "")),
    ).toBe(true);
  });
});

// A node without bubblewrap (the agent-host in a container) probes in the container tier.
describe("Runtime Assets probed in a container", () => {
  const probeContainers = async (docker: Docker, nodeId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${PROBE_LABEL}=${nodeId}`] } });

  /** Verifies the built tree with probes in throw-away containers of `image`, labelled for `nodeId`. */
  const verifyInContainer = (docker: Docker, image: string, nodeId: string) =>
    verifyRuntimeAssets({
      treeDir,
      prober: containerAssetProber({
        docker,
        logger: silentLogger,
        image,
        nodeId,
        dockerCallTimeoutMs: 30_000,
      }),
      signal: signal(),
    });

  it("verifies every asset in a throw-away container of the Runtime Assets' image, and removes it", async () => {
    const { key } = await requireAssets();
    const docker = new Docker();
    const nodeId = uniqueNodeId();
    const report = await verifyInContainer(docker, `workcell-sandbox:${key}`, nodeId);
    expect(report.assets.filter((a) => !a.ready)).toEqual([]);
    expect(report.assets.map((a) => a.name)).toEqual(
      expect.arrayContaining(["bash", "python3", "node", "git", "curl", "ssh", "pip", "venv"]),
    );
    expect(await probeContainers(docker, nodeId)).toEqual([]);
  });

  it("reports every asset not ready when the image cannot run the tree (no loader), and removes the container", async () => {
    await requireAssets();
    // The busybox test image has no /lib64/ld-linux: the tree's binaries cannot start in it.
    const { docker, image } = requireDocker();
    const nodeId = uniqueNodeId();
    const report = await verifyInContainer(docker, image, nodeId);
    const bash = report.assets.find((a) => a.name === "bash");
    expect(bash).toMatchObject({ ready: false, reason: expect.stringMatching(/^probe failed/) });
    expect(report.assets.find((a) => a.name === "python3")?.ready).toBe(false);
    expect(await probeContainers(docker, nodeId)).toEqual([]);
  });

  it("reports every asset not ready when the image is not in the engine, and starts nothing", async () => {
    await requireAssets();
    const docker = new Docker();
    const nodeId = uniqueNodeId();
    const report = await verifyInContainer(docker, `workcell-sandbox:absent-${nodeId}`, nodeId);
    expect(report.assets.length).toBeGreaterThan(0);
    for (const asset of report.assets) {
      expect(asset).toMatchObject({
        ready: false,
        reason: expect.stringMatching(
          /^probe failed in the container tier: .*(no such image|not found)/i,
        ),
      });
    }
    expect(await probeContainers(docker, nodeId)).toEqual([]);
  });
});

describe.each(["process", "container"] as const)("tools at /runtime (%s tier)", (tier) => {
  let dataRoot: DataRoot;
  let driver: SandboxDriver;
  let fixture: ProcessTierFixture | undefined;
  let nodeId: string;
  let ref: Awaited<ReturnType<SandboxDriver["create"]>>;

  beforeAll(async () => {
    const { key } = await requireAssets();
    dataRoot = await freshDataRoot();
    nodeId = uniqueNodeId();
    const config = testConfig(`workcell-sandbox:${key}`, { memoryBytes: 512 * 1024 * 1024 });
    if (tier === "process") {
      fixture = await processTierFixture({
        dataRoot: dataRoot.path,
        config,
        logger: silentLogger,
        runtimeDir: treeDir,
      });
      driver = fixture.driver;
    } else {
      driver = new DockerDriver({
        docker: new Docker(),
        logger: silentLogger,
        dataRoot: dataRoot.path,
        nodeId,
        config,
        runtimeDir: treeDir,
      });
    }
    await materializeWorkdir(dataRoot.path, "tess", "work/tools");
    ref = await driver.create(
      {
        sandboxId: "tools0000001",
        generation: 1,
        uid: "tess",
        runtimeScopeId: randomUUID(),
        workdirPath: "work/tools",
        nodeId,
      },
      signal(),
    );
  });
  afterAll(async () => {
    await fixture?.cleanup();
    if (tier === "container") await removeContainersLabelled(new Docker(), LABEL.nodeId, nodeId);
    await dataRoot?.remove();
  });

  async function sh(script: string) {
    if (!ref.ok) throw new Error(JSON.stringify(ref));
    const out = await driver.exec(
      ref.instance,
      { cmd: ["/runtime/usr/bin/bash", "-c", script] },
      signal(),
    );
    if (!out.ok) throw new Error("gone");
    return {
      code: out.result.exitCode,
      out: out.result.stdout.bytes.toString(),
      err: out.result.stderr.bytes.toString(),
    };
  }

  it("runs real bash, python3, node and git from /runtime", async () => {
    const r = await sh(
      'echo "$BASH_VERSION" | cut -d. -f1; command -v python3 node git; python3 -c "print(6*7)"; node -e "console.log(6*7)"; git init -q repo && git -C repo status --short && echo git-ok',
    );
    expect(r.err).toBe("");
    expect(r.out).toBe(
      "5\n/runtime/usr/bin/python3\n/runtime/usr/bin/node\n/runtime/usr/bin/git\n42\n42\ngit-ok\n",
    );
  });

  it("cannot write to /runtime", async () => {
    const r = await sh("touch /runtime/usr/bin/evil; echo $?");
    expect(r.out).toBe("1\n");
    expect(await stat(join(treeDir, "usr/bin/evil")).catch(() => undefined)).toBeUndefined();
  });

  // Registered for the process tier only: the container tier's ptrace rules are Docker's.
  if (tier === "process")
    it("refuses ptrace of a sibling process", async () => {
      const r = await sh(
        `sleep 30 & python3 -c "import ctypes,os,sys; libc=ctypes.CDLL(None, use_errno=True); r=libc.ptrace(16, $!, 0, 0); print(r, os.strerror(ctypes.get_errno()))"`,
      );
      expect(r.out).toBe("-1 Operation not permitted\n");
    });
});
