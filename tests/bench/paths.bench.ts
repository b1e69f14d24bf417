// normalizeWorkdirPath + sandboxId are on every request and every run; this shows what
// they cost over the bare primitives they are made of (a split and a sha256).
import { createHash, randomUUID } from "node:crypto";
import { sandboxId } from "../../shared/identity/sandbox-id.ts";
import { normalizeWorkdirPath } from "../../shared/paths/normalize-workdir-path.ts";
import { benchTargets, measure, report } from "./measure.ts";

// No target is set for this line: it shows the cost, nothing holds it to a bound.
benchTargets("paths", [{ measure: "rules-and-identity", op: "<=", target: 1 }]).skip(
  "rules-and-identity",
  "informational: no target is set for this bench",
);

const inputs = Array.from({ length: 1000 }, (_, i) =>
  i % 2 === 0 ? `projects/${randomUUID().toUpperCase()}` : `work/repo-${i}/src/module`,
);
const scopes = inputs.map(() => randomUUID());
const runs = 200;
const batch = inputs.length;
let i = 0;
const next = () => {
  i = (i + 1) % inputs.length;
  return i;
};

const baseline = await measure(
  "split('/') + sha256 (baseline)",
  () => {
    const k = next();
    (inputs[k] as string).split("/");
    createHash("sha256").update(`uid-1:${scopes[k]}`).digest("hex").slice(0, 12);
  },
  { runs, batch },
);
const ours = await measure(
  "normalizeWorkdirPath + sandboxId",
  () => {
    const k = next();
    normalizeWorkdirPath(inputs[k] as string);
    sandboxId("uid-1", scopes[k] as string);
  },
  { runs, batch },
);
report("workdir path rules and sandbox identity, per call", baseline, [ours]);
