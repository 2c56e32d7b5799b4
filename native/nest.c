// The nest: builds a zygote run's sandbox (drivers/zygote.py) from a template mount namespace, in
// place of a bubblewrap per run. Built by scripts/build-native.mjs; where it is not, or the kernel
// lacks the mount calls it uses (open_tree, move_mount, mount_setattr: Linux >= 5.12), zygotes
// start bwrap as before.
//
//   nest template OP...   Makes a mount namespace holding the sandbox's read-only tree: an empty
//                         tmpfs root with the OPs applied (ro-bind, symlink, dir, dev), the root
//                         and /dev then read-only. Says "ready\n" on stdout once made, then holds
//                         it until stdin ends; the zygote keeps /proc/<pid>/ns/mnt.
//   nest run OP...        The run's sandbox, around the template on fd 3: a copy of its mount
//                         namespace (setns, then unshare) with new ipc, uts, pid, cgroup and (OP
//                         net) network namespaces, and the OPs applied in its first process (pid 1
//                         there, as bwrap's init is): proc, tmpfs, devpts, cover, dir, bind. That
//                         process says "ready\n" once the sandbox is complete, then reaps what is
//                         left to it until stdin ends, with no capability; the zygote forks the
//                         program's process into its namespaces. This process (outside them) waits
//                         for it and exits as it did (128+N for signal N), as bwrap does.
// Each OP is a word and its arguments:
//   ro-bind SRC DST   SRC's tree (recursive), read-only, nosuid, nodev, at DST (template; run,
//                     inside a tmpfs of the run's)
//   bind SRC DST      SRC's tree, writable, nosuid, nodev (run; cloned before the namespaces)
//   symlink TARGET PATH, dir PATH (0755, and its missing parents)
//   dev PATH          bwrap --dev's tree: a tmpfs with null, zero, full, random, urandom and tty
//                     (nodes of its own, not the host's bound), the links to /proc/self/fd, and
//                     pts/, shm/ (template)
//   devpts PATH       a new devpts instance (run), as bwrap --dev mounts
//   proc PATH         the pid namespace's proc, its irq, bus, sys and sysrq-trigger read-only (run)
//   tmpfs MODE BYTES PATH   a tmpfs (run)
//   cover PATH        a small tmpfs over a template directory, read-only once the OPs are done:
//                     where a bind's mount point is made for this run alone (run)
//   net               a network namespace of its own, loopback up (run)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define OPEN_TREE_CLONE_ 1
#define AT_RECURSIVE_ 0x8000
#define MOVE_MOUNT_F_EMPTY_PATH_ 4
#define MOUNT_ATTR_RDONLY_ 1
#define MOUNT_ATTR_NOSUID_ 2
#define MOUNT_ATTR_NODEV_ 4

struct mount_attr_ {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

#define MAX_OPS 256
#define TEMPLATE_FD 3
/**
 * /dev's nodes, made by the nest itself (root's, 0666) rather than bound from the host as bwrap
 * binds them: a run never holds the host's inodes, whose owner (were it the sandbox's uid) could
 * change their mode or times for the whole host.
 */
static const struct {
  const char *name;
  unsigned major, minor;
} DEV_NODES[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
#define N_DEV_NODES (sizeof DEV_NODES / sizeof *DEV_NODES)
static const char *const DEV_LINKS[][2] = {
    {"/proc/self/fd", "fd"},          {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
    {"/proc/self/fd/2", "stderr"},    {"/proc/kcore", "core"},      {"pts/ptmx", "ptmx"},
};
static const char *const PROC_COVERED[] = {"sys", "sysrq-trigger", "irq", "bus"};

static void die(const char *what, const char *path) {
  dprintf(2, "codexec nest: %s%s%s: %s\n", what, path ? " " : "", path ? path : "", strerror(errno));
  _exit(1);
}

static void usage(const char *why) {
  dprintf(2, "codexec nest: %s\n", why);
  _exit(2);
}

/** An absolute path with no empty, "." or ".." part, short enough for the buffers below. */
static const char *checked(const char *path) {
  size_t length = strlen(path);
  if (path[0] != '/' || length >= 4000) usage("a path must be absolute");
  for (const char *part = path; part; part = strchr(part + 1, '/')) {
    const char *next = part + 1;
    size_t size = strcspn(next, "/");
    if ((size == 0 && *next) || (size == 1 && next[0] == '.') || (size == 2 && next[0] == '.' && next[1] == '.'))
      usage("a path must have no empty, '.' or '..' part");
  }
  return path;
}

/** mkdir -p, each missing directory 0755 (owned by root, as bwrap --dir makes them). */
static void make_dirs(const char *path) {
  char buffer[4096];
  snprintf(buffer, sizeof buffer, "%s", path);
  for (char *at = buffer + 1;; at++) {
    if (*at == '/' || *at == 0) {
      char was = *at;
      *at = 0;
      if (mkdir(buffer, 0755) != 0 && errno != EEXIST) die("mkdir", buffer);
      if (!was) return;
      *at = was;
    }
  }
}

/** The mount point of a tree: a directory, or an empty file for a file's tree. */
static void make_point(int tree, const char *path) {
  struct stat st;
  if (fstat(tree, &st) != 0) die("fstat", path);
  if (S_ISDIR(st.st_mode)) return make_dirs(path);
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash != parent) {
    *slash = 0;
    make_dirs(parent);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
  if (fd < 0 && errno != EEXIST) die("create", path);
  if (fd >= 0) close(fd);
}

/**
 * A detached copy of the tree at `path` (recursive), with the mount attributes `set`; `flags`
 * AT_SYMLINK_NOFOLLOW where the path's last part may never be a link (a run's workspace).
 */
static int clone_tree(const char *path, uint64_t set, int flags) {
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE_ | AT_RECURSIVE_ | O_CLOEXEC | flags);
  if (tree < 0) die("open_tree", path);
  struct mount_attr_ attr = {.attr_set = set};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE_, &attr, sizeof attr) != 0)
    die("mount_setattr", path);
  return tree;
}

static void attach(int tree, const char *path) {
  make_point(tree, path);
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH_) != 0) die("move_mount", path);
  close(tree);
}

static void read_only(const char *path, unsigned long flags) {
  if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) != 0) die("remount", path);
}

/** Every capability gone, the bounding set too: what bwrap --cap-drop ALL leaves a root process. */
static void drop_capabilities(void) {
  for (int cap = 0; cap <= 63; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) die("drop capability", NULL);
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die("capset", NULL);
}

static void say_ready(void) {
  if (write(1, "ready\n", 6) != 6) _exit(1);
  close(1);
}

/** The template: its sources cloned while the host's tree is in view, then the root made. */
static int template(int argc, char **argv) {
  int trees[MAX_OPS];
  if (argc > MAX_OPS) usage("too many operations");
  // Each source cloned first, by the host's paths: the new root then hides the host's tree.
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "ro-bind") && i + 2 < argc) {
      trees[i] = clone_tree(checked(argv[i + 1]), MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_, 0);
      checked(argv[i + 2]);
      i += 2;
    } else if (!strcmp(argv[i], "symlink") && i + 2 < argc) {
      checked(argv[i + 2]);
      i += 2;
    } else if ((!strcmp(argv[i], "dir") || !strcmp(argv[i], "dev")) && i + 1 < argc) {
      checked(argv[i + 1]);
      i += 1;
    } else {
      usage("unknown template operation");
    }
  }
  // A tmpfs root of its own, in a mount namespace of its own, where the host's /tmp is.
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) die("mount root", NULL);
  if (chdir("/tmp") != 0 || syscall(SYS_pivot_root, ".", ".") != 0) die("pivot_root", NULL);
  if (umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) die("umount the old root", NULL);
  const char *dev = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "ro-bind")) {
      attach(trees[i], argv[i + 2]);
      i += 2;
    } else if (!strcmp(argv[i], "symlink")) {
      if (symlink(argv[i + 1], argv[i + 2]) != 0 && errno != EEXIST) die("symlink", argv[i + 2]);
      i += 2;
    } else if (!strcmp(argv[i], "dir")) {
      make_dirs(argv[++i]);
    } else {
      dev = argv[++i];
      make_dirs(dev);
      // Device nodes work here (no nodev); read-only below, so no more are ever made.
      if (mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=0755") != 0) die("mount", dev);
      char path[4096];
      for (size_t n = 0; n < N_DEV_NODES; n++) {
        snprintf(path, sizeof path, "%s/%s", dev, DEV_NODES[n].name);
        if (mknod(path, S_IFCHR | 0666, makedev(DEV_NODES[n].major, DEV_NODES[n].minor)) != 0 ||
            chmod(path, 0666) != 0)
          die("mknod", path);
      }
      for (size_t n = 0; n < sizeof DEV_LINKS / sizeof *DEV_LINKS; n++) {
        snprintf(path, sizeof path, "%s/%s", dev, DEV_LINKS[n][1]);
        if (symlink(DEV_LINKS[n][0], path) != 0) die("symlink", path);
      }
      snprintf(path, sizeof path, "%s/pts", dev);
      make_dirs(path);
      snprintf(path, sizeof path, "%s/shm", dev);
      make_dirs(path);
    }
  }
  // Shared by every run made from it: nothing of it writable, even by a root without capabilities.
  if (dev) read_only(dev, MS_NOSUID);
  read_only("/", MS_NOSUID | MS_NODEV);
  drop_capabilities();
  say_ready();
  char buffer[64];
  for (;;) {
    ssize_t got = read(0, buffer, sizeof buffer);
    if (got == 0 || (got < 0 && errno != EINTR)) return 0;
  }
}

static void loopback_up(void) {
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq request;
  memset(&request, 0, sizeof request);
  strcpy(request.ifr_name, "lo");
  request.ifr_flags = IFF_UP | IFF_RUNNING;
  if (sock < 0 || ioctl(sock, SIOCSIFFLAGS, &request) != 0) die("loopback", NULL);
  close(sock);
}

/** Mount proc at `path`, and cover what bwrap covers (and more) read-only. */
static void mount_proc(const char *path) {
  if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mount", path);
  char sub[4096];
  for (size_t n = 0; n < sizeof PROC_COVERED / sizeof *PROC_COVERED; n++) {
    snprintf(sub, sizeof sub, "%s/%s", path, PROC_COVERED[n]);
    if (mount(sub, sub, NULL, MS_BIND, NULL) != 0) {
      if (errno == ENOENT) continue;
      die("bind", sub);
    }
    read_only(sub, MS_NOSUID | MS_NODEV | MS_NOEXEC);
  }
}

/** pid 1 of the sandbox: reap what is orphaned to it until stdin ends. */
static int reap_until_closed(void) {
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  int signals = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) die("signalfd", NULL);
  say_ready();
  struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = signals, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents) {
      struct signalfd_siginfo info;
      while (read(signals, &info, sizeof info) > 0) {
      }
      while (waitpid(-1, NULL, WNOHANG) > 0) {
      }
    }
    if (fds[0].revents) {
      char buffer[64];
      ssize_t got = read(0, buffer, sizeof buffer);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) return 0;
    }
  }
}

static int run(int argc, char **argv) {
  int trees[MAX_OPS];
  const char *covers[MAX_OPS];
  int n_covers = 0, net = 0;
  if (argc > MAX_OPS) usage("too many operations");
  // The binds' sources, cloned by the host's paths before the template's tree is entered.
  for (int i = 0; i < argc; i++) {
    const char *op = argv[i];
    if (!strcmp(op, "bind") && i + 2 < argc) {
      trees[i] = clone_tree(checked(argv[i + 1]), MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_, AT_SYMLINK_NOFOLLOW);
      checked(argv[i + 2]);
      i += 2;
    } else if (!strcmp(op, "ro-bind") && i + 2 < argc) {
      trees[i] = clone_tree(checked(argv[i + 1]), MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_, 0);
      checked(argv[i + 2]);
      i += 2;
    } else if (!strcmp(op, "symlink") && i + 2 < argc) {
      checked(argv[i + 2]);
      i += 2;
    } else if (!strcmp(op, "tmpfs") && i + 3 < argc) {
      checked(argv[i + 3]);
      i += 3;
    } else if ((!strcmp(op, "proc") || !strcmp(op, "devpts") || !strcmp(op, "cover") || !strcmp(op, "dir")) &&
               i + 1 < argc) {
      checked(argv[++i]);
    } else if (!strcmp(op, "net")) {
      net = 1;
    } else {
      usage("unknown run operation");
    }
  }
  if (setns(TEMPLATE_FD, CLONE_NEWNS) != 0) die("setns (the template)", NULL);
  close(TEMPLATE_FD);
  int flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | (net ? CLONE_NEWNET : 0);
  if (unshare(flags) != 0) die("unshare", NULL);
  if (unshare(CLONE_NEWCGROUP) != 0 && errno != EINVAL) die("unshare cgroup", NULL);  // bwrap's -try
  if (sethostname("codexec", 7) != 0) die("sethostname", NULL);
  if (net) loopback_up();
  // Its children, and pid 1's, are the sandbox's: the zygote forks the program's process there.
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, NULL);
  pid_t init = fork();
  if (init < 0) die("fork", NULL);
  if (init > 0) {
    for (int i = 0; i < argc; i++)
      if (!strcmp(argv[i], "bind") || !strcmp(argv[i], "ro-bind")) close(trees[i]);
    close(1);
    int status;
    while (waitpid(init, &status, 0) < 0)
      if (errno != EINTR) return 1;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  // Gone with the nest outside; had that died already, stdin's end ends this process too.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setsid();
  for (int i = 0; i < argc; i++) {
    const char *op = argv[i];
    if (!strcmp(op, "bind") || !strcmp(op, "ro-bind")) {
      attach(trees[i], argv[i + 2]);
      i += 2;
    } else if (!strcmp(op, "symlink")) {
      if (symlink(argv[i + 1], argv[i + 2]) != 0) die("symlink", argv[i + 2]);
      i += 2;
    } else if (!strcmp(op, "tmpfs")) {
      char data[96];
      snprintf(data, sizeof data, "mode=%.4s,size=%.20s", argv[i + 1], argv[i + 2]);
      make_dirs(argv[i + 3]);
      if (mount("tmpfs", argv[i + 3], "tmpfs", MS_NOSUID | MS_NODEV, data) != 0) die("mount", argv[i + 3]);
      i += 3;
    } else if (!strcmp(op, "proc")) {
      mount_proc(argv[++i]);
    } else if (!strcmp(op, "devpts")) {
      const char *path = argv[++i];
      if (mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") != 0)
        die("mount", path);
    } else if (!strcmp(op, "cover")) {
      const char *path = argv[++i];
      if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k,nr_inodes=64") != 0)
        die("mount", path);
      covers[n_covers++] = path;
    } else if (!strcmp(op, "dir")) {
      make_dirs(argv[++i]);
    }
  }
  for (int i = 0; i < n_covers; i++) read_only(covers[i], MS_NOSUID | MS_NODEV);
  if (chdir("/") != 0) die("chdir", "/");
  drop_capabilities();
  for (int fd = 3; fd < 1024; fd++)
    if (fd != 1) close(fd);
  return reap_until_closed();
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "template")) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWNS) != 0) die("unshare", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("make the tree private", NULL);
    return template(argc - 2, argv + 2);
  }
  if (argc >= 2 && !strcmp(argv[1], "run")) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return run(argc - 2, argv + 2);
  }
  usage("usage: nest template OP... | nest run OP...");
}
