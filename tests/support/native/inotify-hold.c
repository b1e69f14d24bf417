/*
 * Test helper (built static by tests/support/inotify-hold.ts, run inside sandboxes):
 * opens inotify instances until the kernel refuses or `max` (argv[1]) are open, prints
 * "opened=<n> error=<strerror or none>", then, with a second argument, holds them until
 * killed. Each instance counts against the per-uid budget of the user namespace's owner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

int main(int argc, char **argv) {
  long max = argc > 1 ? atol(argv[1]) : 100000;
  int opened = 0;
  int err = 0;
  while (opened < max) {
    if (inotify_init1(0) < 0) {
      err = errno;
      break;
    }
    opened++;
  }
  printf("opened=%d error=%s\n", opened, err ? strerror(err) : "none");
  fflush(stdout);
  if (argc > 2)
    for (;;) pause();
  return 0;
}
