import { UsageError } from "./cli-context.ts";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
/** RFC 8628 §3.5: without an interval the client polls every 5 s; slow_down adds 5 s. */
const DEFAULT_INTERVAL_S = 5;
const SLOW_DOWN_S = 5;
const REQUEST_TIMEOUT_MS = 15_000;

type DeviceAuthorization = {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
};

/**
 * The OAuth 2.0 device authorization grant (RFC 8628) against an OIDC issuer: asks for a
 * code, tells the person where to enter it (`tell`), polls the token endpoint at the
 * issuer's interval until they approve, deny, or the code expires. Returns the access
 * token. An issuer without a device endpoint is a UsageError saying what to do instead.
 */
export async function deviceCodeToken(p: {
  issuer: string;
  clientId: string;
  scope?: string;
  tell: (text: string) => void;
  signal: AbortSignal;
}): Promise<string> {
  const discovery = await getJson(
    `${p.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`,
    p.signal,
  );
  const deviceEndpoint = stringField(discovery, "device_authorization_endpoint");
  const tokenEndpoint = stringField(discovery, "token_endpoint");
  if (deviceEndpoint === undefined || tokenEndpoint === undefined) {
    throw new UsageError(
      `${p.issuer} does not offer the device flow: create a personal access token in the console (Tokens) and run 'workcell login --url <api>' to paste it.`,
    );
  }
  const grant = (await postForm(
    deviceEndpoint,
    { client_id: p.clientId, scope: p.scope ?? "openid" },
    p.signal,
  )) as DeviceAuthorization;
  if (!grant.device_code || !grant.user_code || !grant.verification_uri) {
    throw new Error(`${deviceEndpoint} answered no device code.`);
  }
  p.tell(
    `Open ${grant.verification_uri_complete ?? grant.verification_uri} and enter the code ${grant.user_code}\n`,
  );
  let interval = grant.interval ?? DEFAULT_INTERVAL_S;
  const deadline = Date.now() + grant.expires_in * 1000;
  while (Date.now() < deadline) {
    await wait(interval * 1000, p.signal);
    const answer = await postForm(
      tokenEndpoint,
      { grant_type: DEVICE_GRANT, device_code: grant.device_code, client_id: p.clientId },
      p.signal,
      true,
    );
    const token = stringField(answer, "access_token");
    if (token !== undefined) return token;
    const error = stringField(answer, "error");
    if (error === "authorization_pending") continue;
    if (error === "slow_down") {
      interval += SLOW_DOWN_S;
      continue;
    }
    throw new Error(
      error === "access_denied"
        ? "The sign-in was denied at the issuer."
        : `The issuer ended the sign-in: ${error ?? "no token and no error"}.`,
    );
  }
  throw new Error("The code expired before it was entered: run 'workcell login' again.");
}

async function getJson(url: string, signal: AbortSignal): Promise<unknown> {
  const res = await fetch(url, {
    signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
  });
  if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}.`);
  return res.json();
}

/** A form POST; `errorsAreAnswers`: a 400 with an OAuth error body is returned, not thrown. */
async function postForm(
  url: string,
  form: Record<string, string>,
  signal: AbortSignal,
  errorsAreAnswers = false,
): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form),
    signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
  });
  const body = (await res.json().catch(() => ({}))) as unknown;
  if (res.ok || (errorsAreAnswers && res.status === 400)) return body;
  throw new Error(`${url} answered HTTP ${res.status}.`);
}

function stringField(value: unknown, key: string): string | undefined {
  const field = (value as Record<string, unknown> | null)?.[key];
  return typeof field === "string" && field !== "" ? field : undefined;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
