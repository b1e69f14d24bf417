/**
 * The agent's view of its user's secrets (decision 0132): names and hosts only. The
 * variables hold placeholders that work only towards those hosts, through the proxy.
 */
export function secretsPrompt(
  egress: { readonly secrets: readonly { name: string; hosts: readonly string[] }[] } | undefined,
): string | undefined {
  if (egress === undefined || egress.secrets.length === 0) return undefined;
  const lines = egress.secrets.map((s) => `- $${s.name}: for ${s.hosts.join(", ")}`);
  return [
    "Secrets: these environment variables hold placeholders, not the real values; use them as credentials (e.g. `Authorization: Bearer $NAME`, or in an https URL for git) and the network proxy puts the real value in, only for the hosts listed. Sending one anywhere else is refused and reported.",
    ...lines,
  ].join("\n");
}
