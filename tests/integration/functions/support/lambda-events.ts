/**
 * Lambda proxy events as AWS sends them (payload format 2.0): API Gateway HTTP APIs and
 * Lambda Function URLs use the same shape and differ in their request context.
 */
export type LambdaHttpEvent = {
  version: "2.0";
  routeKey: string;
  rawPath: string;
  rawQueryString: string;
  cookies?: string[];
  headers: Record<string, string>;
  requestContext: Record<string, unknown> & { http: Record<string, string> };
  body?: string;
  isBase64Encoded: boolean;
};

type RequestSpec = {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  base64?: boolean;
};

function common(
  spec: RequestSpec,
  domainName: string,
  extra: Record<string, unknown>,
): LambdaHttpEvent {
  const body =
    spec.body === undefined
      ? undefined
      : spec.base64
        ? Buffer.from(spec.body).toString("base64")
        : spec.body;
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: spec.path,
    rawQueryString: spec.query ?? "",
    headers: { host: domainName, "user-agent": "vitest", ...spec.headers },
    requestContext: {
      accountId: "123456789012",
      domainName,
      domainPrefix: domainName.split(".")[0],
      http: {
        method: spec.method,
        path: spec.path,
        protocol: "HTTP/1.1",
        sourceIp: "203.0.113.7",
        userAgent: "vitest",
      },
      requestId: crypto.randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: "30/Nov/2026:00:00:00 +0000",
      timeEpoch: Date.now(),
      ...extra,
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: spec.base64 === true,
  };
}

/** An API Gateway HTTP API ($default stage) event. */
export function apiGatewayV2Event(spec: RequestSpec): LambdaHttpEvent {
  return common(spec, "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com", { apiId: "a1b2c3d4e5" });
}

/** A Lambda Function URL event (no API id; IAM or no auth). */
export function functionUrlEvent(spec: RequestSpec): LambdaHttpEvent {
  return common(spec, "abcdefghijklmnopqrstuvwxyz234567.lambda-url.us-east-1.on.aws", {
    apiId: "abcdefghijklmnopqrstuvwxyz234567",
    authorizer: { iam: null },
  });
}
