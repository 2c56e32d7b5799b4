// A Node addon for the node zygote (drivers/zygote_node.mjs): a Node initialised once serves
// forks of itself, one per run, each forked into its run's pid namespace and then confined by the
// calls below before any code of the run's is loaded. Built by scripts/build-native.mjs with the
// C compiler alone: the few Node-API declarations it uses are written out here (a stable ABI), so
// no Node headers are needed.
//
// serve(fd) never returns in the zygote: it waits on `fd` (a SOCK_SEQPACKET socket to
// drivers/zygote.py) for jobs, a message each with descriptors (SCM_RIGHTS), forks one child per
// job and reports "pid <pid>" or "fail <why>" for it, then "exit <pid> <wait status>" once that
// child is reaped. A job's text starts with a line "<P> <S>": P is 1 if its first descriptor is
// the pid namespace to fork into, S how many of the next are the child's stdio slots (0, 1, ...).
// The zygote is started with descriptors 0 to RESERVED-1 open, so that Node's own (its event
// loop's) lie above them: the child moves its slots into place, closes the other reserved ones,
// then re-makes the event loop, and returns to JavaScript with the job's text (after its first
// line) and its remaining descriptors.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <grp.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
extern napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
extern napi_status napi_get_value_int32(napi_env, napi_value, int32_t *);
extern napi_status napi_get_value_double(napi_env, napi_value, double *);
extern napi_status napi_create_int32(napi_env, int32_t, napi_value *);
extern napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
extern napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
extern napi_status napi_create_object(napi_env, napi_value *);
extern napi_status napi_create_string_utf8(napi_env, const char *, size_t, napi_value *);
extern napi_status napi_create_array_with_length(napi_env, size_t, napi_value *);
extern napi_status napi_set_element(napi_env, napi_value, uint32_t, napi_value);
extern napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);
extern napi_status napi_throw_error(napi_env, const char *, const char *);
extern napi_status napi_get_undefined(napi_env, napi_value *);
extern napi_status napi_get_uv_event_loop(napi_env, void **);
extern napi_status napi_call_function(napi_env, napi_value, napi_value, size_t, const napi_value *, napi_value *);
extern napi_status napi_get_and_clear_last_exception(napi_env, napi_value *);
extern int uv_loop_fork(void *loop);

#define MAX_JOB (256 * 1024)
#define MAX_FDS 16
#define RESERVED 16

static napi_value undefined(napi_env env) {
  napi_value value;
  napi_get_undefined(env, &value);
  return value;
}

/** The call's integer arguments; false (and a JavaScript error thrown) if one is not a number. */
static int ints(napi_env env, napi_callback_info info, size_t count, int64_t *out) {
  napi_value argv[4];
  size_t argc = 4;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  for (size_t i = 0; i < count; i++) {
    double value;
    if (i >= argc || napi_get_value_double(env, argv[i], &value) != 0) {
      napi_throw_error(env, NULL, "expected a number");
      return 0;
    }
    out[i] = (int64_t)value;
  }
  return 1;
}

/** Throw `what: strerror(errno)` if `result` is -1; the JavaScript value to return. */
static napi_value checked(napi_env env, long result, const char *what) {
  if (result == -1) {
    char message[160];
    snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
    napi_throw_error(env, NULL, message);
  }
  return undefined(env);
}

/**
 * Every mapping may be copied by a fork: V8 marks some of its memory do-not-fork, which a child
 * that goes on running this isolate needs.
 */
static void all_fork(void) {
  FILE *maps = fopen("/proc/self/maps", "re");
  if (!maps) return;
  unsigned long start, end;
  char line[512];
  while (fgets(line, sizeof line, maps)) {
    if (sscanf(line, "%lx-%lx", &start, &end) == 2) madvise((void *)start, end - start, MADV_DOFORK);
  }
  fclose(maps);
}

static void say(int sock, const char *text) {
  // A dead peer (the zygote gone) is this process's end: its children die with it (their
  // PR_SET_PDEATHSIG) and drivers/zygote.py kills what is left of their sandboxes.
  if (send(sock, text, strlen(text), MSG_NOSIGNAL) == -1) syscall(SYS_exit_group, 0);
}

/** The children being served, each watched by a pidfd (readable once it has exited). */
#define MAX_CHILDREN 1024
static struct pollfd watched[MAX_CHILDREN + 1];
static pid_t pids[MAX_CHILDREN + 1];
static int children;

/** Reap the children whose pidfds are readable and report each. */
static void reap(int sock) {
  char text[64];
  for (int i = 1; i <= children;) {
    int status;
    if (!watched[i].revents || waitpid(pids[i], &status, WNOHANG) <= 0) {
      i++;
      continue;
    }
    snprintf(text, sizeof text, "exit %d %d", pids[i], status);
    say(sock, text);
    close(watched[i].fd);
    watched[i] = watched[children];
    pids[i] = pids[children];
    children--;
  }
}

/** One job's message: its text (NUL-ended) and descriptors. -1 at the zygote's end. */
static int receive(int sock, char *text, int *fds, int *nfds) {
  struct iovec iov = {text, MAX_JOB - 1};
  union {
    char buffer[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    struct cmsghdr align;
  } control;
  struct msghdr message = {0};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.buffer;
  message.msg_controllen = sizeof control.buffer;
  ssize_t n = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
  if (n <= 0) return -1;
  text[n] = 0;
  *nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      memcpy(fds + *nfds, CMSG_DATA(c), sizeof(int) * count);
      *nfds += count;
    }
  }
  return 0;
}

/** The kernel's struct sigaction (rt_sigaction): glibc's wrapper refuses its own signals, 32 and 33. */
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};

/** Which signals are ignored (bit N-1 for signal N). */
static uint64_t ignored_signals(void) {
  uint64_t ignored = 0;
  for (int signum = 1; signum <= 64; signum++) {
    struct kernel_sigaction old;
    if (syscall(SYS_rt_sigaction, signum, NULL, &old, 8) == 0 && old.handler == SIG_IGN) ignored |= 1ULL << (signum - 1);
  }
  return ignored;
}

/**
 * What Node ignores once started, before any code of the zygote's runs (at this addon's load), but
 * glibc's own two (SIGCANCEL, SIGSETXID): a posix_spawn by a process that handles them leaves them
 * ignored across the exec, where a started program has them at their default.
 */
static uint64_t ignored_at_start;
#define GLIBC_INTERNAL ((1ULL << 31) | (1ULL << 32))

/** Signals the zygote came to ignore since its start go back to their default, as in a started Node. */
static void restore_signals(void) {
  uint64_t since = ignored_signals() & ~ignored_at_start;
  for (int signum = 1; signum <= 64; signum++) {
    if (!(since & (1ULL << (signum - 1)))) continue;
    struct kernel_sigaction fresh = {SIG_DFL, 0, NULL, 0};
    syscall(SYS_rt_sigaction, signum, &fresh, NULL, 8);
  }
}

/** Move `slots` into descriptors 0, 1, ...; close the rest of the reserved ones. */
static int place(const int *slots, int count) {
  int high[MAX_FDS];
  for (int i = 0; i < count; i++) {
    high[i] = fcntl(slots[i], F_DUPFD_CLOEXEC, RESERVED);
    if (high[i] == -1) return -1;
  }
  for (int i = 0; i < count; i++) close(slots[i]);
  for (int i = 0; i < count; i++) {
    if (dup2(high[i], i) == -1) return -1;
    close(high[i]);
  }
  for (int fd = count; fd < RESERVED; fd++) close(fd);
  return 0;
}

/** The child's side of a fork: its stdio in place, the loop re-made, the job for JavaScript. */
static napi_value child(napi_env env, void *loop, const char *text, const int *fds, int nfds, int slots) {
  if (slots > nfds || place(fds, slots) == -1) {
    dprintf(2, "codexec node zygote: could not place the run's descriptors: %s\n", strerror(errno));
    syscall(SYS_exit_group, 127);
  }
  restore_signals();
  uv_loop_fork(loop);
  napi_value job, value, list;
  napi_create_object(env, &job);
  napi_create_string_utf8(env, text, strlen(text), &value);
  napi_set_named_property(env, job, "text", value);
  napi_create_array_with_length(env, nfds - slots, &list);
  for (int i = slots; i < nfds; i++) {
    napi_create_int32(env, fds[i], &value);
    napi_set_element(env, list, i - slots, value);
  }
  napi_set_named_property(env, job, "fds", list);
  return job;
}

/**
 * serve(fd, beforeFork): never returns here; returns in each forked child {text, fds} (see above).
 * beforeFork() is called before each fork (what it throws is dropped).
 */
static napi_value Serve(napi_env env, napi_callback_info info) {
  int64_t arg;
  if (!ints(env, info, 1, &arg)) return NULL;
  int sock = (int)arg;
  napi_value argv[2], self;
  size_t argc = 2;
  napi_get_cb_info(env, info, &argc, argv, &self, NULL);
  napi_value before = argc > 1 ? argv[1] : NULL;
  void *loop;
  napi_get_uv_event_loop(env, &loop);
  int own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  static char text[MAX_JOB];
  int fds[MAX_FDS];
  if (own == -1) return checked(env, -1, "serve");
  watched[0] = (struct pollfd){sock, POLLIN, 0};
  for (;;) {
    if (poll(watched, children + 1, -1) == -1) continue;
    reap(sock);
    if (watched[0].revents & (POLLHUP | POLLERR | POLLNVAL)) syscall(SYS_exit_group, 0);
    if (!watched[0].revents) continue;
    int nfds = 0;
    if (receive(sock, text, fds, &nfds) == -1) syscall(SYS_exit_group, 0);
    int pidns = 0, slots = 0, skip = 0;
    if (sscanf(text, "%d %d\n%n", &pidns, &slots, &skip) != 2 || pidns < 0 || pidns > 1 || slots < 0 ||
        pidns + slots > nfds) {
      say(sock, "fail a malformed job");
      for (int i = 0; i < nfds; i++) close(fds[i]);
      continue;
    }
    if (before) {
      napi_value ignored;
      if (napi_call_function(env, self, before, 0, NULL, &ignored) != 0)
        napi_get_and_clear_last_exception(env, &ignored);
    }
    all_fork();
    if (pidns && setns(fds[0], CLONE_NEWPID) == -1) {
      char why[96];
      snprintf(why, sizeof why, "fail setns pid: %s", strerror(errno));
      say(sock, why);
    } else {
      pid_t pid = fork();
      if (pid == 0) {
        // A process group of its own: in the template's, kill(0, ...) would reach every other run
        // forked from it, whatever its sandbox or principal.
        setpgid(0, 0);
        for (int i = 1; i <= children; i++) close(watched[i].fd);
        if (pidns) close(fds[0]);  // joined for this child already
        close(own);
        close(sock);
        return child(env, loop, text + skip, fds + pidns, nfds - pidns, slots);
      }
      // Never fork into a sandbox again: this process cannot go on if it cannot return.
      if (pidns && setns(own, CLONE_NEWPID) == -1) syscall(SYS_exit_group, 70);
      char said[96];
      int pidfd = pid == -1 ? -1 : (int)syscall(SYS_pidfd_open, pid, 0);
      if (pid == -1) {
        snprintf(said, sizeof said, "fail fork: %s", strerror(errno));
      } else if (pidfd == -1 || children == MAX_CHILDREN) {
        kill(pid, SIGKILL);  // unwatchable: never a run whose end would go unreported
        waitpid(pid, NULL, 0);
        snprintf(said, sizeof said, "fail pidfd: %s", pidfd == -1 ? strerror(errno) : "too many");
        if (pidfd != -1) close(pidfd);
      } else {
        fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        children++;
        watched[children] = (struct pollfd){pidfd, POLLIN, 0};
        pids[children] = pid;
        snprintf(said, sizeof said, "pid %d", pid);
      }
      say(sock, said);
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
  }
}

static napi_value Setns(napi_env env, napi_callback_info info) {
  int64_t a[2];
  if (!ints(env, info, 2, a)) return NULL;
  return checked(env, setns((int)a[0], (int)a[1]), "setns");
}

static napi_value Unshare(napi_env env, napi_callback_info info) {
  int64_t a[1];
  if (!ints(env, info, 1, a)) return NULL;
  return checked(env, unshare((int)a[0]), "unshare");
}

static napi_value Prctl(napi_env env, napi_callback_info info) {
  int64_t a[2];
  if (!ints(env, info, 2, a)) return NULL;
  return checked(env, prctl((int)a[0], (unsigned long)a[1], 0, 0, 0), "prctl");
}

/** dropCapabilities(): the bounding set emptied (bwrap --cap-drop ALL). */
static napi_value DropCapabilities(napi_env env, napi_callback_info info) {
  (void)info;
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 && errno != EINVAL) return checked(env, -1, "capbset");
  }
  return undefined(env);
}

/** become(uid, gid): no groups, then the gid and the uid, real, effective and saved. */
static napi_value Become(napi_env env, napi_callback_info info) {
  int64_t a[2];
  if (!ints(env, info, 2, a)) return NULL;
  if (setgroups(0, NULL) == -1) return checked(env, -1, "setgroups");
  if (setresgid(a[1], a[1], a[1]) == -1) return checked(env, -1, "setresgid");
  return checked(env, setresuid(a[0], a[0], a[0]), "setresuid");
}

/** seccomp(program): a classic BPF filter, 8 bytes an instruction. */
static napi_value Seccomp(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t argc = 1;
  void *data;
  size_t length;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_buffer_info(env, argv[0], &data, &length) != 0 || length % 8) {
    napi_throw_error(env, NULL, "expected a filter");
    return NULL;
  }
  struct sock_fprog program = {(unsigned short)(length / 8), (struct sock_filter *)data};
  return checked(env, prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0), "seccomp");
}

static napi_value Setrlimit(napi_env env, napi_callback_info info) {
  int64_t a[2];
  if (!ints(env, info, 2, a)) return NULL;
  struct rlimit limit = {(rlim_t)a[1], (rlim_t)a[1]};
  return checked(env, setrlimit((int)a[0], &limit), "setrlimit");
}

static napi_value Close(napi_env env, napi_callback_info info) {
  int64_t a[1];
  if (!ints(env, info, 1, a)) return NULL;
  return checked(env, close((int)a[0]), "close");
}

/** exitGroup(code): the process ends now, without Node's teardown (its threads are the zygote's). */
static napi_value ExitGroup(napi_env env, napi_callback_info info) {
  int64_t a[1];
  if (!ints(env, info, 1, a)) return NULL;
  syscall(SYS_exit_group, (int)a[0]);
  return NULL;
}

static napi_value Getpid(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value value;
  napi_create_int32(env, getpid(), &value);
  return value;
}

static volatile int fault_code;

static void exit_on_fault(int signum) {
  (void)signum;
  syscall(SYS_exit_group, fault_code);
}

/**
 * exitOnFault(code): the process ends with `code` at its first fault, or after 2 s: Node's
 * teardown in a fork joins threads the fork does not have.
 */
static napi_value ExitOnFault(napi_env env, napi_callback_info info) {
  int64_t a[1];
  if (!ints(env, info, 1, a)) return NULL;
  fault_code = (int)a[0];
  struct sigaction action = {0};
  action.sa_handler = exit_on_fault;
  int faults[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGALRM};
  for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) sigaction(faults[i], &action, NULL);
  struct itimerval later = {{0, 0}, {2, 0}};
  setitimer(ITIMER_REAL, &later, NULL);
  return undefined(env);
}

static void define(napi_env env, napi_value exports, const char *name, napi_callback callback) {
  napi_value fn;
  napi_create_function(env, name, strlen(name), callback, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  ignored_at_start = ignored_signals() & ~GLIBC_INTERNAL;
  define(env, exports, "serve", Serve);
  define(env, exports, "setns", Setns);
  define(env, exports, "unshare", Unshare);
  define(env, exports, "prctl", Prctl);
  define(env, exports, "dropCapabilities", DropCapabilities);
  define(env, exports, "become", Become);
  define(env, exports, "seccomp", Seccomp);
  define(env, exports, "setrlimit", Setrlimit);
  define(env, exports, "close", Close);
  define(env, exports, "exitGroup", ExitGroup);
  define(env, exports, "exitOnFault", ExitOnFault);
  define(env, exports, "getpid", Getpid);
  return exports;
}
