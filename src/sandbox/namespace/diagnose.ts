// Why the namespace sandbox cannot start here, and the fix for each cause: what `auto` says when it
// refuses to run code, and what `codexec doctor` prints. Readers take a root (fake /proc trees in tests).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findOnPath } from '../host/index.js';

export type CauseId =
  | 'apparmor'
  | 'max_user_namespaces'
  | 'unprivileged_userns_clone'
  | 'cap_sys_admin'
  | 'container'
  | 'seccomp'
  | 'unknown';

export interface Cause {
  readonly id: CauseId;
  /** What stops the namespaces, in one sentence. */
  readonly cause: string;
  /** What to change, in one sentence. */
  readonly fix: string;
}

/** A real attempt to make the namespaces bubblewrap needs: `error` is what unshare said. */
export type Attempt =
  | { readonly ok: true; readonly command: string }
  | { readonly ok: false; readonly command: string; readonly error: string };

export interface Diagnosis {
  /** The server runs as root: bubblewrap then needs CAP_SYS_ADMIN, not a user namespace. */
  readonly root: boolean;
  /** undefined: there was no unshare to try with. */
  readonly attempt: Attempt | undefined;
  /** Empty when nothing here stops namespaces (a failed probe then has another reason). */
  readonly causes: readonly Cause[];
}

export interface DiagnoseOptions {
  /** Where /proc, /.dockerenv and /run/.containerenv are read (default '/'). */
  readonly root?: string;
  readonly uid?: number;
  /** The real attempt (default: unshare as bubblewrap would, see tryNamespaces()). */
  readonly attempt?: (root: boolean) => Attempt | undefined;
  /** bubblewrap's path, for the AppArmor profile the fix names. */
  readonly bwrap?: string;
}

const CAP_SYS_ADMIN = 21n;

/** Read the facts, try the real thing once, and name every cause that holds. */
export function diagnoseNamespaces(options: DiagnoseOptions = {}): Diagnosis {
  const at = (path: string) => join(options.root ?? '/', path);
  const read = (path: string) => readText(at(path));
  const root = (options.uid ?? process.getuid?.() ?? 0) === 0;
  const attempt = (options.attempt ?? tryNamespaces)(root);
  const failed = attempt?.ok === false ? attempt.error : undefined;
  const status = read('proc/self/status') ?? '';
  const seccomp = /^Seccomp:\s*(\d)/m.exec(status)?.[1];
  const capEff = /^CapEff:\s*([0-9a-f]+)/im.exec(status)?.[1];
  const container = existsSync(at('.dockerenv'))
    ? 'a Docker container (/.dockerenv)'
    : existsSync(at('run/.containerenv'))
      ? 'a Podman container (/run/.containerenv)'
      : undefined;
  const causes: Cause[] = root ? [] : userNamespaceCauses(read, options.bwrap);
  if (root && capEff !== undefined && ((BigInt(`0x${capEff}`) >> CAP_SYS_ADMIN) & 1n) === 0n) {
    causes.push({
      id: container ? 'container' : 'cap_sys_admin',
      cause:
        `the server runs as root without CAP_SYS_ADMIN (CapEff ${capEff})` +
        (container ? ` in ${container} started without the rights to make namespaces` : ''),
      fix: container
        ? 'start the container with --cap-add SYS_ADMIN (and a seccomp profile that allows unshare), or run ' +
          'codexec in it as a non-root user with user namespaces allowed'
        : 'run codexec with CAP_SYS_ADMIN, or as a non-root user with user namespaces allowed',
    });
  }
  if (seccomp === '2' && (failed === undefined || /not permitted/i.test(failed)) && attempt?.ok !== true)
    causes.push({
      id: 'seccomp',
      cause:
        'the server runs under a seccomp filter (Seccomp: 2 in /proc/self/status) that denies unshare/clone ' +
        `of new namespaces${failed ? ` (${attempt?.command}: ${failed})` : ''}, as Docker's default profile does`,
      fix:
        'start the server without that filter, or with a profile that allows unshare and clone with CLONE_NEW* ' +
        'flags (docker/podman run --security-opt seccomp=unconfined, or a profile of your own)',
    });
  if (failed !== undefined && causes.length === 0)
    causes.push(
      container
        ? {
            id: 'container',
            cause: `${container} that does not allow namespaces (${attempt?.command}: ${failed})`,
            fix:
              'start the container with the rights to make them (--security-opt seccomp=unconfined ' +
              '--security-opt apparmor=unconfined, or --privileged)',
          }
        : {
            id: 'unknown',
            cause: `${attempt?.command} fails here: ${failed}`,
            fix: 'find what denies it (an LSM such as SELinux or AppArmor, a sandbox codexec itself runs in)',
          },
    );
  return { root, attempt, causes };
}

/** What stops a non-root server's user namespaces: the sysctls that switch them off or restrict them. */
function userNamespaceCauses(read: (path: string) => string | undefined, bwrap: string | undefined): Cause[] {
  const causes: Cause[] = [];
  if (read('proc/sys/kernel/apparmor_restrict_unprivileged_userns') === '1') {
    const path = bwrap ?? findOnPath('bwrap') ?? '/usr/bin/bwrap';
    causes.push({
      id: 'apparmor',
      cause:
        'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, ' +
        "Ubuntu 23.10 and later): a program without a profile that allows 'userns' gets none",
      fix:
        'give bubblewrap a profile: /etc/apparmor.d/bwrap with the lines "abi <abi/4.0>,", "include ' +
        `<tunables/global>" and "profile bwrap ${path} flags=(unconfined) { userns, }", then ` +
        'apparmor_parser -r /etc/apparmor.d/bwrap; ' +
        'or, machine-wide, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0',
    });
  }
  if (read('proc/sys/user/max_user_namespaces') === '0')
    causes.push({
      id: 'max_user_namespaces',
      cause:
        'user namespaces are switched off: user.max_user_namespaces=0 (in this user namespace: a container or ' +
        'a parent namespace may have set it)',
      fix: 'sysctl -w user.max_user_namespaces=15000 (and the same in /etc/sysctl.d/ to keep it), where it was set to 0',
    });
  if (read('proc/sys/kernel/unprivileged_userns_clone') === '0')
    causes.push({
      id: 'unprivileged_userns_clone',
      cause: 'the kernel refuses user namespaces to unprivileged users: kernel.unprivileged_userns_clone=0',
      fix: 'sysctl -w kernel.unprivileged_userns_clone=1 (and the same in /etc/sysctl.d/ to keep it)',
    });
  return causes;
}

/** The causes for an error message: "Cause: … Fix: …" each; empty when none was found. */
export function explainCauses(causes: readonly Cause[]): string {
  return causes.map((c) => `Cause: ${c.cause}. Fix: ${c.fix}.`).join(' ');
}

/**
 * Try what bubblewrap will do: a non-root server needs a user namespace it maps itself into, a root
 * one new mount namespaces (CAP_SYS_ADMIN). undefined: no unshare here to try with.
 */
export function tryNamespaces(root: boolean): Attempt | undefined {
  const unshare = findOnPath('unshare');
  if (!unshare) return undefined;
  const args = root ? ['--mount', '--net', 'true'] : ['--user', '--map-root-user', '--mount', 'true'];
  const command = `unshare ${args.join(' ')}`;
  const result = spawnSync(unshare, args, {
    encoding: 'utf8',
    timeout: 5000,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (result.status === 0) return { ok: true, command };
  const said = result.error?.message ?? result.stderr.trim().split('\n').at(-1) ?? '';
  return { ok: false, command, error: said || `exit ${result.status ?? result.signal}` };
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}
