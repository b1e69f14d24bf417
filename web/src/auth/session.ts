/** Who is signed in, and how to get a current bearer token for them. */
export type Session = {
  uid: string;
  admin: boolean;
  token(): Promise<string>;
  signOut(): Promise<void>;
};
