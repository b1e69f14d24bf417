/** `workcell <command> --help`: each client command's own usage. */
export const COMMAND_HELP: Readonly<Record<string, string>> = {
  login: `usage: workcell login --url <api> [--token <token> | --local <uid> [--admin]]
  Checks the token with one API call, then stores the URL and token (mode 0600) in
  $WORKCELL_CONFIG, else $XDG_CONFIG_HOME/workcell/config.json, else ~/.config/workcell/.
  --token   a personal access token (wct_…) or a sign-in token; without it and without
            --local, the token is read from standard input (paste it, then Enter)
  --local   local Workcell only: mint a dev token for <uid> (--admin: with the admin claim)
  --issuer <url> --client-id <id>
            sign in with the OIDC device flow (where the issuer offers it: a code to enter
            in a browser); a personal access token for this machine is then created and stored
`,
  run: `usage: workcell run "<input>" [--thread <id>] [--max-steps n] [--model m] [--checkpoint] [--json]
  Starts a run (a new thread unless --thread) and streams it: the reply on stdout, tool
  calls, live output and the outcome on stderr. --checkpoint: checkpoint the Workdir
  first ('workcell undo' then gives its files back; on by default where the node reflinks).
  Exit status: the command's own exit code for a shell-model run ("command failed (exit N)"),
  0 for a succeeded model run, 1 for a failed or timed-out run, 130 when cancelled or
  interrupted (Ctrl-C leaves the run going on the server: 'workcell cancel' stops it).
  --ask bash,write_file | all: those tool calls wait for a person; on a terminal you are
  asked right there (y once, r for the rest of the run, N deny), else 'workcell approve'.
`,
  threads: `usage: workcell threads [ls | show <id> | rm <id>] [--json]
`,
  files: `usage: workcell files ls [dir] | cat <path> | put <local> [path] | rm <path> [--thread <id>]
  The Workdir of --thread, else of your last 'workcell run'. put never overwrites.
`,
  attach: `usage: workcell attach <file>... [--thread <id>]
  Uploads the files as attachments into uploads/ of the thread.
`,
  changes: `usage: workcell changes [<run_id>] [--json]
  The files a run (default: your last) added, modified or deleted.
`,
  cancel: `usage: workcell cancel [<run_id>]
  Asks the run (default: your last) to stop; its 'workcell run' then exits 130.
`,
  checkpoints: `usage: workcell checkpoints [ls | create [label] | rm <id>] [--thread <id>] [--json]
  Copies of the Workdir of --thread (else of your last 'workcell run'), newest first.
`,
  restore: `usage: workcell restore <checkpoint_id> [--thread <id>] [--json]
  Makes the Workdir exactly the checkpoint; the files it replaces become a new checkpoint.
`,
  undo: `usage: workcell undo [<run_id>] [--json]
  Restores the checkpoint taken before the run (default: your last).
`,
  fork: `usage: workcell fork [<checkpoint_id>] [--thread <id>] [--json]
  A new thread in a new project whose Workdir is a copy of the checkpoint (or the current Workdir).
`,
  approvals: `usage: workcell approvals [<run_id>] [--json]
  The approvals a run (default: your last) asked for: the tool, its exact arguments, the status.
`,
  approve: `usage: workcell approve <approval_id> [--for-run | --deny] [--note <text>] [--run <run_id>]
  Lets the waiting call run once (--for-run: the same tool for the rest of the run), or
  refuses it (--deny). The run is your last unless --run names another.
`,
  skills: `usage: workcell skills [--json]
  The skills your sandboxes see under /home/gem/skills.
`,
  usage: `usage: workcell usage [--json]
  Your workspace bytes and inodes and your runs against your limits (--json: raw numbers).
`,
  tokens: `usage: workcell tokens create <name> [--scope runs|files|admin ...] [--expires-days N]
       workcell tokens list
       workcell tokens revoke <token_id>
  Personal access tokens for scripts and CI (needs a sign-in token, not a PAT). The new
  token is printed once on stdout; the server keeps only a hash. Default scopes: runs, files.
`,
  secrets: `usage: printf %s "$VALUE" | workcell secrets set <NAME> --host <pattern> [--host ...]
                    [--header Authorization] [--template 'Bearer {value}']
       workcell secrets list
       workcell secrets rm <NAME>
  Secrets your sandboxes use without holding them: a sandbox sees $NAME as a placeholder,
  and the network proxy puts the value in only on requests to the hosts given. The value is
  read from stdin (never an argument) and can never be read back.
`,
  admin: `usage: workcell admin skills | grant <slug> <uid> | revoke <slug> <uid> | nodes | runtime
                      | limits <uid> [name=value | name=default ...]
  Administrator commands (a token with the admin claim, or a PAT with the admin scope).
`,
};
