import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  decideQuotaEnforcement,
  detectQuotaEnforcement,
  mountOf,
  parseMountInfo,
} from "../../../../agent-host/quota/detect-quota-enforcement.ts";

const MOUNTINFO = [
  "22 27 0:21 / /proc rw,relatime - proc proc rw",
  "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
  "40 27 7:0 / /srv/data rw,relatime - ext4 /dev/loop0 rw,prjquota",
  "41 27 7:1 / /srv/data\\040two rw,relatime - xfs /dev/loop1 rw,pquota",
  "42 27 7:2 / /srv/plain rw - ext4 /dev/loop2 rw,usrquota",
].join("\n");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "workcell-quota-detect-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("finds the longest mount holding a path, unescaping mountinfo's octal", () => {
  const entries = parseMountInfo(MOUNTINFO);
  expect(mountOf(entries, "/srv/data/users")?.source).toBe("/dev/loop0");
  expect(mountOf(entries, "/srv/data two/x")?.fsType).toBe("xfs");
  // A sibling with a common prefix is not a parent.
  expect(mountOf(entries, "/srv/database")?.mountPoint).toBe("/");
});

it("never reports project_quota: not without kernel support, not without prjquota, not while no project ids are set", () => {
  const entries = parseMountInfo(MOUNTINFO);
  const noKernel = decideQuotaEnforcement(mountOf(entries, "/srv/data"), false, "/srv/data");
  expect(noKernel).toEqual({ mode: "accounting", detail: expect.stringContaining("CONFIG_QUOTA") });
  const userOnly = decideQuotaEnforcement(mountOf(entries, "/srv/plain"), true, "/srv/plain");
  expect(userOnly).toEqual({
    mode: "accounting",
    detail: expect.stringContaining("not mounted with project quotas"),
  });
  const prj = decideQuotaEnforcement(mountOf(entries, "/srv/data"), true, "/srv/data");
  expect(prj).toEqual({
    mode: "accounting",
    detail: expect.stringContaining("mounted with prjquota"),
  });
  expect(decideQuotaEnforcement(undefined, true, "/x").detail).toContain("no mount found");
});

it("reads this machine's real mount table for a temp data root", async () => {
  const report = await detectQuotaEnforcement(dir, AbortSignal.timeout(10_000));
  expect(report.mode).toBe("accounting");
  expect(report.detail).toContain(`data root ${dir}`);
});
