import { createContext, useContext } from "react";
import type { ConsoleApi } from "./api/console-api.ts";
import type { ConsoleConfig } from "./auth/console-config.ts";
import type { Session } from "./auth/session.ts";

export type ConsoleContextValue = { api: ConsoleApi; session: Session; config: ConsoleConfig };

export const ConsoleContext = createContext<ConsoleContextValue | undefined>(undefined);

/** The signed-in user's API client and session (only inside the signed-in layout). */
export function useConsole(): ConsoleContextValue {
  const value = useContext(ConsoleContext);
  if (value === undefined) throw new Error("useConsole outside a signed-in page");
  return value;
}
