/*
 * The process tier's exec shim (decision 0088). bubblewrap runs it as the command of a
 * sandbox built ahead of its exec: bwrap has made every namespace and mount, set
 * no_new_privs, dropped to uid 1000, loaded the seccomp filter and only then exec'd this.
 * Until agent-host releases bwrap's --block-fd, this program has not even started; once
 * released it reads the exec's spec from fd 9 (written by agent-host before the release,
 * ended by EOF), closes that fd, changes to the exec's cwd and execs the command with
 * exactly the exec's environment, searching PATH as bwrap's own execvp did. The command
 * starts with only stdin, stdout and stderr: every other descriptor (bwrap's --userns fd,
 * whatever agent-host inherited from its launcher without close-on-exec) is closed first
 * (issue 37, decision 0104).
 *
 * Spec: NUL-terminated strings: argc, envc (decimal), cwd, argv[0..argc), env[0..envc)
 * as NAME=value. Nothing else may follow. An empty or malformed spec runs nothing (125).
 * Failures of chdir and exec are reported in bwrap's own words and exit status (1), so an
 * exec fails exactly as it did when bwrap changed directory and exec'd the command itself.
 * Static (no loader, no library from /runtime) and independent of the Runtime Assets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPEC_FD 9
/* Larger than any exec(2) can carry (ARG_MAX for argv + envp is far below). */
#define MAX_SPEC (64L * 1024 * 1024)
#define NOTHING_RAN 125

extern char **environ;

static void refuse(const char *why) {
  fprintf(stderr, "exec shim: %s; nothing was run\n", why);
  exit(NOTHING_RAN);
}

static char *read_spec(size_t *length) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) refuse("out of memory");
  for (;;) {
    if (len == cap) {
      if (cap >= (size_t)MAX_SPEC) refuse("exec spec too large");
      cap *= 2;
      buf = realloc(buf, cap);
      if (!buf) refuse("out of memory");
    }
    ssize_t got = read(SPEC_FD, buf + len, cap - len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) refuse("cannot read the exec spec");
    if (got == 0) break;
    len += (size_t)got;
  }
  close(SPEC_FD);
  *length = len;
  return buf;
}

/*
 * Closes every descriptor above stderr. close_range(2) when the kernel has it (5.9+; the
 * seccomp filter allows it); otherwise each one up to the hard limit. Which of them were
 * open does not matter: closing a closed fd is a harmless EBADF.
 */
static void close_all_but_stdio(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
#endif
  struct rlimit limit;
  rlim_t max = getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_max : 1024;
  if (max == RLIM_INFINITY || max > (1U << 20)) max = 1U << 20;
  for (rlim_t fd = 3; fd < max; fd++) close((int)fd);
}

/* The next NUL-terminated string at *at, or NULL when none is left. */
static char *next(char *buf, size_t len, size_t *at) {
  if (*at >= len) return NULL;
  char *end = memchr(buf + *at, '\0', len - *at);
  if (!end) return NULL;
  char *s = buf + *at;
  *at = (size_t)(end - buf) + 1;
  return s;
}

static long count(char *s, size_t len) {
  if (!s || !*s) refuse("malformed exec spec");
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || *end || n < 0 || (size_t)n > len) refuse("malformed exec spec");
  return n;
}

int main(void) {
  size_t len = 0, at = 0;
  char *buf = read_spec(&len);
  if (len == 0) refuse("no exec spec");
  long argc = count(next(buf, len, &at), len);
  long envc = count(next(buf, len, &at), len);
  char *cwd = next(buf, len, &at);
  if (argc < 1 || !cwd) refuse("malformed exec spec");
  char **argv = calloc((size_t)argc + 1, sizeof *argv);
  /* One more for PWD, which bwrap set after its chdir (and overrode the exec's with). */
  char **envp = calloc((size_t)envc + 2, sizeof *envp);
  if (!argv || !envp) refuse("out of memory");
  for (long i = 0; i < argc; i++)
    if (!(argv[i] = next(buf, len, &at))) refuse("malformed exec spec");
  for (long i = 0; i < envc; i++)
    if (!(envp[i] = next(buf, len, &at)) || !strchr(envp[i], '=')) refuse("malformed exec spec");
  if (at != len) refuse("malformed exec spec");

  if (chdir(cwd) != 0) {
    int e = errno;
    fprintf(stderr, "bwrap: Can't chdir to %s: %s\n", cwd, strerror(e));
    return 1;
  }
  size_t pwd_len = strlen(cwd) + sizeof "PWD=";
  char *pwd = malloc(pwd_len);
  if (!pwd) refuse("out of memory");
  snprintf(pwd, pwd_len, "PWD=%s", cwd);
  long slot = envc;
  for (long i = 0; i < envc; i++)
    if (strncmp(envp[i], "PWD=", 4) == 0) slot = i;
  envp[slot] = pwd;

  /* execvp searches the PATH of environ, as bwrap's did after --clearenv and --setenv. */
  environ = envp;
  close_all_but_stdio();
  execvp(argv[0], argv);
  int e = errno;
  fprintf(stderr, "bwrap: execvp %s: %s\n", argv[0], strerror(e));
  return 1;
}
