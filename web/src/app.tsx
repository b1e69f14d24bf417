import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Navigate, Route, Routes } from "react-router";
import { AdminLimitsPage } from "./admin/admin-limits-page.tsx";
import { AdminNodesPage } from "./admin/admin-nodes-page.tsx";
import { AdminRuntimePage } from "./admin/admin-runtime-page.tsx";
import { AdminSkillsPage } from "./admin/admin-skills-page.tsx";
import { createSdkConsoleApi } from "./api/sdk-console-api.ts";
import { apiBaseUrl, type ConsoleConfig, loadConsoleConfig } from "./auth/console-config.ts";
import { restoreLocalSession } from "./auth/local-session.ts";
import { OidcCallback, useOidcSession } from "./auth/oidc-boot.tsx";
import { OIDC_CALLBACK_PATH } from "./auth/oidc-session.ts";
import type { Session } from "./auth/session.ts";
import { SignInPage } from "./auth/sign-in-page.tsx";
import { ConsoleContext } from "./console-context.tsx";
import { Layout } from "./layout.tsx";
import { SecretsPage } from "./secrets/secrets-page.tsx";
import { SkillsPage } from "./skills/skills-page.tsx";
import { HomePage } from "./threads/home-page.tsx";
import { ThreadPage } from "./threads/thread-page.tsx";
import { TokensPage } from "./tokens/tokens-page.tsx";
import { ErrorMessage } from "./ui/error-message.tsx";
import { UsagePage } from "./usage/usage-page.tsx";

export function App() {
  const config = useQuery({
    queryKey: ["console-config"],
    queryFn: ({ signal }) => loadConsoleConfig(signal),
    staleTime: Number.POSITIVE_INFINITY,
  });
  if (config.isPending) return <p className="boot">Loading Workcell…</p>;
  if (config.isError) return <ErrorMessage error={config.error} title="Cannot start the console" />;
  return <SignedInGate config={config.data} />;
}

function SignedInGate({ config }: { config: ConsoleConfig }) {
  const queryClient = useQueryClient();
  // Another user's cached data must never show after a sign-out.
  const signedOut = () => {
    queryClient.clear();
    setSession(undefined);
  };
  const [session, setSession] = useState<Session | undefined>(() =>
    config.mode === "local" ? restoreLocalSession(signedOut) : undefined,
  );
  const oidc = useOidcSession(config, setSession, signedOut);
  const api = useMemo(
    () =>
      session === undefined
        ? undefined
        : createSdkConsoleApi({ baseUrl: apiBaseUrl(config), token: () => session.token() }),
    [config, session],
  );

  if (session === undefined || api === undefined) {
    return (
      <Routes>
        <Route path={OIDC_CALLBACK_PATH} element={<OidcCallback oidc={oidc} />} />
        <Route
          path="*"
          element={
            <SignInPage config={config} oidc={oidc} onSignedIn={setSession} signedOut={signedOut} />
          }
        />
      </Routes>
    );
  }
  return (
    <ConsoleContext.Provider value={{ api, session, config }}>
      <Routes>
        <Route element={<Layout />}>
          <Route index element={<HomePage />} />
          <Route path="threads/:threadId/*" element={<ThreadPage />} />
          <Route path="skills" element={<SkillsPage />} />
          <Route path="usage" element={<UsagePage />} />
          <Route path="tokens" element={<TokensPage />} />
          <Route path="secrets" element={<SecretsPage />} />
          <Route path="admin/skills" element={<AdminSkillsPage />} />
          <Route path="admin/nodes" element={<AdminNodesPage />} />
          <Route path="admin/runtime" element={<AdminRuntimePage />} />
          <Route path="admin/limits/:uid?" element={<AdminLimitsPage />} />
          <Route path={OIDC_CALLBACK_PATH.slice(1)} element={<Navigate to="/" replace />} />
          <Route path="*" element={<p className="empty">No such page.</p>} />
        </Route>
      </Routes>
    </ConsoleContext.Provider>
  );
}
