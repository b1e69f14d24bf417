/** Who is calling: the OIDC subject and whether the admin claim was set. */
export type Principal = {
  readonly uid: string;
  readonly admin: boolean;
};
