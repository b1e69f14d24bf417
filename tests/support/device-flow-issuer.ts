import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import {
  newSigningKey,
  type SigningKey,
  signToken,
} from "../integration/functions/support/jwks-server.ts";

export type DeviceFlowIssuer = {
  url: string;
  jwksUrl: string;
  /** The person entered the code and signed in as `sub`: the next poll gets a token. */
  approve(sub: string): void;
  /** Token endpoint polls so far. */
  polls(): number;
  close(): Promise<void>;
};

/**
 * An OIDC identity provider on loopback with the RFC 8628 device flow (discovery, device
 * authorization, token, JWKS), standing in for a third-party issuer: polls answer
 * authorization_pending until `approve`, then an RS256 access token for `audience`.
 * `device: false` publishes no device endpoint (an issuer without the flow).
 */
export async function startDeviceFlowIssuer(p: {
  audience: string;
  device?: boolean;
}): Promise<DeviceFlowIssuer> {
  const key: SigningKey = await newSigningKey("device-test");
  let url = "";
  let approved: string | undefined;
  let polls = 0;
  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    void (async () => {
      const form = new URLSearchParams(await bodyOf(req));
      switch (`${req.method} ${req.url}`) {
        case "GET /.well-known/openid-configuration":
          return reply(200, {
            issuer: url,
            token_endpoint: `${url}/token`,
            jwks_uri: `${url}/jwks.json`,
            ...(p.device === false ? {} : { device_authorization_endpoint: `${url}/device` }),
          });
        case "GET /jwks.json":
          return reply(200, { keys: [key.publicJwk] });
        case "POST /device":
          if (form.get("client_id") !== "workcell-cli")
            return reply(400, { error: "invalid_client" });
          return reply(200, {
            device_code: "device-code-1",
            user_code: "WDJB-MJHT",
            verification_uri: `${url}/activate`,
            expires_in: 120,
            interval: 1,
          });
        case "POST /token": {
          polls += 1;
          if (form.get("device_code") !== "device-code-1")
            return reply(400, { error: "invalid_grant" });
          if (approved === undefined) return reply(400, { error: "authorization_pending" });
          const now = Math.floor(Date.now() / 1000);
          const token = await signToken(key, {
            iss: url,
            aud: p.audience,
            sub: approved,
            iat: now,
            exp: now + 3600,
          });
          return reply(200, { access_token: token, token_type: "Bearer", expires_in: 3600 });
        }
        default:
          return reply(404, { error: "not_found" });
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    jwksUrl: `${url}/jwks.json`,
    approve: (sub) => {
      approved = sub;
    },
    polls: () => polls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}
