/* A static C port of probe.py, for containers with their own image and no
 * interpreter (run.sh builds it with `cc -static`). Writes what a hostile
 * tenant would try, as JSON, to the file named by argv[1] (through
 * <file>.tmp and a rename):
 *
 *   status        the Seccomp/NoNewPrivs/Cap* lines of /proc/self/status
 *   uid           getuid()
 *   keyctl        errno of keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)
 *   mount         errno of mount(tmpfs) onto dirname(argv[1])/mnt (made
 *                 first when missing)
 *   unshare_user  errno of unshare(CLONE_NEWUSER), in a child
 *   proc_sys, sys the mount options of /proc/sys and /sys ("" if none)
 *
 * An errno field is 0 when the call returned 0, as in probe.py.
 * Then each further argument, in order: `sleep=N` sleeps N seconds,
 * `exit=N` exits with status N; after the last one it exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEYCTL_JOIN_SESSION_KEYRING 1

static int errno_of(long rc) { return rc == 0 ? 0 : errno; }

/* Appends s to out as a JSON string. */
static void json_string(FILE *out, const char *s)
{
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

static char *strip(char *s)
{
  char *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
  return s;
}

static void write_status(FILE *out)
{
  static const char *keys[] = {"Seccomp", "NoNewPrivs", "CapEff", "CapBnd", "CapAmb", "CapPrm"};
  char line[512];
  int first = 1;
  size_t i;
  FILE *f = fopen("/proc/self/status", "r");
  fputs("{", out);
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    *colon = 0;
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      if (strcmp(line, keys[i]) != 0) continue;
      fprintf(out, "%s", first ? "" : ", ");
      json_string(out, line);
      fputs(": ", out);
      json_string(out, strip(colon + 1));
      first = 0;
    }
  }
  if (f) fclose(f);
  fputs("}", out);
}

/* The options (field 6) of the last mountinfo entry mounted at `at`. */
static void mount_options(const char *at, char *opts, size_t n)
{
  char line[4096];
  FILE *f = fopen("/proc/self/mountinfo", "r");
  opts[0] = 0;
  while (f && fgets(line, sizeof line, f)) {
    char *field[6], *save = NULL, *p = line;
    int i;
    for (i = 0; i < 6; i++, p = NULL)
      if (!(field[i] = strtok_r(p, " \t\n", &save))) break;
    if (i == 6 && strcmp(field[4], at) == 0) snprintf(opts, n, "%s", field[5]);
  }
  if (f) fclose(f);
}

static int unshare_user_errno(void)
{
  int st = 0;
  pid_t pid = fork();
  if (pid == 0) _exit(errno_of(unshare(CLONE_NEWUSER)));
  if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
  return st >> 8;
}

static int mount_errno(const char *report)
{
  char dir[4096], target[4200];
  snprintf(dir, sizeof dir, "%s", report);
  snprintf(target, sizeof target, "%s/mnt", dirname(dir));
  mkdir(target, 0755);  /* EEXIST is fine; a failed mkdir shows as the mount's errno */
  errno = 0;
  return errno_of(mount("none", target, "tmpfs", 0, NULL));
}

static int write_report(const char *path)
{
  char tmp[4200], opts[1024];
  int keyctl, mnt, unsh;
  FILE *out;
  errno = 0;
  keyctl = errno_of(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL));
  mnt = mount_errno(path);
  /* unshare last: it would change this process if it succeeded. */
  unsh = unshare_user_errno();
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (!(out = fopen(tmp, "w"))) return -1;
  fputs("{\"status\": ", out);
  write_status(out);
  fprintf(out, ", \"uid\": %u, \"keyctl\": %d, \"mount\": %d, \"unshare_user\": %d",
          (unsigned)getuid(), keyctl, mnt, unsh);
  mount_options("/proc/sys", opts, sizeof opts);
  fputs(", \"proc_sys\": ", out);
  json_string(out, opts);
  mount_options("/sys", opts, sizeof opts);
  fputs(", \"sys\": ", out);
  json_string(out, opts);
  fputs("}", out);
  if (fclose(out) != 0) return -1;
  return rename(tmp, path);
}

static void sleep_seconds(long s)
{
  struct timespec t = {s, 0};
  while (nanosleep(&t, &t) < 0 && errno == EINTR) {}
}

int main(int argc, char **argv)
{
  int i;
  if (argc < 2) {
    fprintf(stderr, "usage: probe <report.json> [sleep=N | exit=N]...\n");
    return 2;
  }
  if (write_report(argv[1]) != 0) {
    fprintf(stderr, "probe: cannot write %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  for (i = 2; i < argc; i++) {
    if (strncmp(argv[i], "sleep=", 6) == 0) sleep_seconds(atol(argv[i] + 6));
    else if (strncmp(argv[i], "exit=", 5) == 0) return atoi(argv[i] + 5);
    else {
      fprintf(stderr, "probe: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  return 0;
}
