import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

// A one-module wheel and its PEP 503 simple-index page, built on the host by Python's
// zipfile (a wheel is a zip with METADATA, WHEEL and RECORD), for `pip install` against the
// fake internet (issue #34): no real index is ever reached.
const BUILD = `
import base64, hashlib, os, sys, zipfile
root, name, version, text = sys.argv[1:5]
dist = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": f"GREETING = {text!r}\\n",
    f"{dist}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\\nGenerator: workcell-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(d.encode())},{len(d.encode())}\\n" for p, d in files.items())
files[f"{dist}/RECORD"] = record + f"{dist}/RECORD,,\\n"
wheel = f"{name}-{version}-py3-none-any.whl"
os.makedirs(f"{root}/wheels", exist_ok=True)
with zipfile.ZipFile(f"{root}/wheels/{wheel}", "w") as z:
    for p, d in files.items():
        z.writestr(p, d)
sha = hashlib.sha256(open(f"{root}/wheels/{wheel}", "rb").read()).hexdigest()
os.makedirs(f"{root}/simple/{name}", exist_ok=True)
with open(f"{root}/simple/{name}/index.html", "w") as f:
    f.write(f'<html><body><a href="/static/wheels/{wheel}#sha256={sha}">{wheel}</a></body></html>\\n')
`;

/**
 * Writes `<dir>/wheels/<name>-<version>-py3-none-any.whl` (a package `name` whose GREETING
 * is `greeting`) and `<dir>/simple/<name>/index.html` linking it with its sha256.
 */
export async function writeTinyWheelIndex(
  dir: string,
  name: string,
  greeting: string,
  version = "1.0",
): Promise<void> {
  await run("python3", ["-c", BUILD, dir, name, version, greeting], { timeout: 30_000 });
}
