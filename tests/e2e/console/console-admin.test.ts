import { describe, expect, test } from "vitest";
import { Workcell } from "../../../sdk/src/index.ts";
import { screenshot } from "../../support/chromium.ts";
import { count, signIn, text, visible, WAIT } from "./console-page.ts";
import { consoleSuite } from "./console-suite.ts";

// The console's operator pages in real Chromium against the real local Workcell: skills
// administration, nodes, runtime readiness and per-user limits, each checked against what
// the API itself answers, and refused to a user who is not an admin.

const suite = consoleSuite();
const freshPage = suite.freshPage;
const url = () => suite.workcell().url;
const adminClient = async () =>
  new Workcell({ baseUrl: url(), token: await suite.workcell().token("root", { admin: true }) });

describe("web console: administration", () => {
  test("as admin, grant the builtin skill to a user and see it in that user's skill list", async () => {
    const user = await freshPage();
    await signIn(user, url(), "grace");
    await user.getByRole("link", { name: "Skills" }).click();
    await visible(user.getByText("No skills yet."));

    const admin = await freshPage();
    await signIn(admin, url(), "root", true);
    await admin.getByRole("link", { name: "Admin" }).click();
    await admin.getByRole("textbox", { name: "Skill" }).fill("hello");
    await admin.getByRole("textbox", { name: "User id" }).fill("grace");
    await admin.getByRole("button", { name: "Grant" }).click();
    await expect
      .poll(() => text(admin.getByTestId("grant-result")), WAIT)
      .toContain("Granted hello to grace");
    await expect.poll(() => text(admin.getByTestId("grants-hello")), WAIT).toBe("1");
    await screenshot(admin, "07a-admin-grant");

    await user.reload();
    await expect.poll(() => text(user.getByTestId("skill-list")), WAIT).toContain("hello");
    await screenshot(user, "07b-user-skills");
  });

  test("as admin, the nodes page shows the local agent-host active with its heartbeat", async () => {
    const admin = await freshPage();
    await signIn(admin, url(), "root", true);
    await admin.getByRole("link", { name: "Admin" }).click();
    await admin
      .getByRole("navigation", { name: "Administration" })
      .getByRole("link", { name: "Nodes" })
      .click();
    const table = admin.getByTestId("node-table");
    await expect.poll(() => text(table.locator("tbody tr").first()), WAIT).toContain("active");
    expect(await text(table)).toContain("local-");
    await screenshot(admin, "09-admin-nodes");

    const user = await freshPage();
    await signIn(user, url(), "kim");
    await user.goto(`${url()}/admin/nodes`);
    await visible(user.getByText("This page is for administrators."));
  });

  test("as admin, the runtime page shows each node's sandbox tiers and Runtime Assets as the API reports them", async () => {
    const admin = await freshPage();
    await signIn(admin, url(), "root", true);
    await admin.getByRole("link", { name: "Admin" }).click();
    await admin
      .getByRole("navigation", { name: "Administration" })
      .getByRole("link", { name: "Runtime" })
      .click();
    expect(admin.url()).toBe(`${url()}/admin/runtime`);
    const reported = await (await adminClient()).admin.runtime();
    expect(reported).toHaveLength(1);
    const [node] = reported;
    if (node === undefined) throw new Error("no runtime report");
    const card = admin.getByRole("article", { name: node.node_id });
    await visible(card);
    // Every tier the node reported, with its readiness and detail, as one row.
    const tiers = card.getByRole("table", { name: `Sandbox tiers of ${node.node_id}` });
    for (const tier of node.sandbox_tiers) {
      // By its first cell: a tier's detail may name the other tier.
      const row = tiers
        .getByRole("row")
        .filter({ has: admin.getByRole("cell", { name: tier.tier, exact: true }) });
      expect(await text(row)).toContain(tier.ready ? "ready" : "not ready");
      expect(await text(row)).toContain(tier.detail);
    }
    expect(await count(tiers.locator("tbody tr"))).toBe(node.sandbox_tiers.length);
    await expect.poll(() => text(card), WAIT).toContain(node.runtime_assets.version);
    const assets = card.getByRole("table", { name: `Runtime Assets of ${node.node_id}` });
    if (node.runtime_assets.assets.length > 0) {
      expect(await count(assets.locator("tbody tr"))).toBe(node.runtime_assets.assets.length);
    }
    // How the node takes checkpoints, as it reported it (issue 39).
    expect(node.checkpoints.mode).not.toBe("unknown");
    expect(await text(card.getByTestId("checkpoint-mode"))).toContain(node.checkpoints.mode);
    expect(await text(card.getByTestId("checkpoint-mode"))).toContain(node.checkpoints.detail);
    await screenshot(admin, "12-admin-runtime");

    const user = await freshPage();
    await signIn(user, url(), "lena");
    await user.goto(`${url()}/admin/runtime`);
    await visible(user.getByText("This page is for administrators."));
    expect(await count(user.getByRole("article"))).toBe(0);
  });

  test("as admin, set a user's network hosts on the limits page: in force through the API, and cleared back to no network", async () => {
    const api = await adminClient();
    const admin = await freshPage();
    await signIn(admin, url(), "root", true);
    await admin.goto(`${url()}/admin/limits/nico`);
    const policy = admin.getByTestId("network-policy");
    await expect.poll(() => text(policy), WAIT).toMatch(/No network.*deployment's default/);
    await admin.getByLabel("Allowed hosts").fill("pypi.org, *.github.com");
    await admin.getByRole("button", { name: "Save network" }).click();
    await visible(admin.getByRole("status").getByText("Network saved."));
    await expect
      .poll(() => text(policy), WAIT)
      .toMatch(/pypi\.org, \*\.github\.com.*set by an admin/);
    expect((await api.admin.network("nico")).policy).toEqual({
      mode: "allowlist",
      allow: ["pypi.org", "*.github.com"],
    });
    await screenshot(admin, "13b-admin-network");
    // An IP is not a host pattern: refused, nothing changed.
    await admin.getByLabel("Allowed hosts").fill("10.0.0.1");
    await admin.getByRole("button", { name: "Save network" }).click();
    await visible(admin.getByRole("alert"));
    expect((await api.admin.network("nico")).policy.allow).toEqual(["pypi.org", "*.github.com"]);
    await admin.getByLabel("Allowed hosts").fill("");
    await admin.getByRole("button", { name: "Save network" }).click();
    await expect.poll(() => text(policy), WAIT).toMatch(/No network.*set by an admin/);
    expect((await api.admin.network("nico")).policy).toEqual({ mode: "none", allow: [] });
  });

  test("as admin, change a user's limits: in force through the API, kept on reload, back to defaults when cleared; a bad value is refused and changes nothing", async () => {
    const api = await adminClient();
    const admin = await freshPage();
    await signIn(admin, url(), "root", true);
    await admin.goto(`${url()}/admin/limits`);
    await admin.getByRole("textbox", { name: "User id" }).fill("maya");
    await admin.getByRole("button", { name: "Show limits" }).click();
    expect(admin.url()).toBe(`${url()}/admin/limits/maya`);
    const runs = admin.locator('tr[data-limit="max_concurrent_runs"]');
    await expect.poll(() => text(runs), WAIT).toMatch(/default/);

    await admin.getByLabel("Runs at once").fill("2");
    await admin.getByLabel("API requests per minute").fill("120");
    await admin.getByRole("button", { name: "Save limits" }).click();
    await visible(admin.getByRole("status").getByText("Saved."));
    await expect.poll(() => text(runs), WAIT).toMatch(/^Runs at once\s*2\s*set by admin/);
    expect(await api.admin.limits("maya")).toMatchObject({
      limits: { max_concurrent_runs: 2, requests_per_minute: 120 },
      overrides: { max_concurrent_runs: 2, requests_per_minute: 120 },
    });

    // The URL is shareable and the page shows what the server holds.
    await admin.reload();
    await expect.poll(() => admin.getByLabel("Runs at once").inputValue(), WAIT).toBe("2");
    await screenshot(admin, "13-admin-limits");

    // Beyond the API's bound: its message is shown and nothing changed.
    await admin.getByLabel("Runs at once").fill("5000");
    await admin.getByRole("button", { name: "Save limits" }).click();
    await visible(admin.getByRole("alert"));
    expect(await text(admin.getByRole("alert"))).toMatch(/invalid_request/);
    expect((await api.admin.limits("maya")).overrides).toEqual({
      max_concurrent_runs: 2,
      requests_per_minute: 120,
    });

    await admin.getByRole("button", { name: "Clear overrides" }).click();
    await admin.getByRole("button", { name: "Save limits" }).click();
    await expect.poll(() => text(runs), WAIT).toMatch(/default/);
    expect((await api.admin.limits("maya")).overrides).toEqual({});

    const user = await freshPage();
    await signIn(user, url(), "maya");
    await user.goto(`${url()}/admin/limits/maya`);
    await visible(user.getByText("This page is for administrators."));
    expect(await count(user.getByRole("button", { name: "Save limits" }))).toBe(0);
  });
});
