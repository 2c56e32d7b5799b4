// Entries of a --from-host image written by codexec rather than copied: the host's passwd, group
// and hosts name its own users and machines, so the image gets minimal ones; the empty mount points
// and the writable /tmp (1777: `--tmpfs /tmp` keeps the image's mode) exist on no host as wanted.
import type { TarEntry } from './tar.js';

/** The user code runs as (the backend passes --user 65534:65534 too). */
export const SANDBOX_UID = 65534;
/** A named account for tools that want one; the image's default user stays 65534. */
const NAMED_UID = 1000;

export function imageEtc(bash: string): TarEntry[] {
  const file = (name: string, content: string): TarEntry => ({ name, type: 'file', mode: 0o644, content });
  const dir = (name: string, mode = 0o755, owner = 0): TarEntry => ({
    name,
    type: 'dir',
    mode,
    uid: owner,
    gid: owner,
  });
  return [
    dir('etc'),
    file(
      'etc/passwd',
      `root:x:0:0:root:/root:${bash}\n` +
        `nobody:x:${SANDBOX_UID}:${SANDBOX_UID}:nobody:/nonexistent:/usr/sbin/nologin\n` +
        `sandbox:x:${NAMED_UID}:${NAMED_UID}:codexec sandbox:/workspace:${bash}\n`,
    ),
    file('etc/group', `root:x:0:\nnogroup:x:${SANDBOX_UID}:\nsandbox:x:${NAMED_UID}:\n`),
    file('etc/nsswitch.conf', 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n'),
    file('etc/hosts', '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'),
    dir('tmp', 0o1777),
    dir('workspace', 0o755, SANDBOX_UID),
    dir('root', 0o700),
    dir('proc', 0o555),
    dir('sys', 0o555),
    dir('dev'),
  ];
}

/** Names the host copy must not contribute: codexec writes them (an import refuses duplicates). */
export function ownNames(entries: readonly TarEntry[]): Set<string> {
  return new Set(entries.map((entry) => entry.name));
}
