// Why namespaces fail (src/sandbox/namespace/diagnose.ts): each cause from a fake /proc tree, then what this
// machine really says. The real denials (a user namespace limit of 0, a seccomp filter, root
// without CAP_SYS_ADMIN) are driven through `codexec doctor` in test/cli/doctor-sandbox.test.ts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Attempt, diagnoseNamespaces, explainCauses, tryNamespaces } from '../../src/sandbox/index.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const ALL_CAPS = '000001ffffffffff';
const NO_SYS_ADMIN = '000001ffffdfffff';

/** A fake root: /proc/self/status with these fields, the sysctls given, and any marker files. */
function fakeRoot(files: Record<string, string>, status: { seccomp?: string; capEff?: string } = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'codexec-diagnose-'));
  roots.push(root);
  const all = {
    'proc/self/status': `Name:\tnode\nCapEff:\t${status.capEff ?? '0000000000000000'}\nSeccomp:\t${status.seccomp ?? '0'}\n`,
    'proc/sys/user/max_user_namespaces': '15000',
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), `${text}\n`);
  }
  return root;
}

const failed = (error: string) => (): Attempt => ({ ok: false, command: 'unshare --user', error });
const worked = (): Attempt => ({ ok: true, command: 'unshare --user' });
const ids = (root: string, uid: number, attempt: () => Attempt | undefined) =>
  diagnoseNamespaces({ root, uid, attempt, bwrap: '/usr/bin/bwrap' }).causes.map((c) => c.id);

describe('diagnoseNamespaces', () => {
  it("AppArmor's restriction (Ubuntu 24.04): a bwrap profile with userns, or the sysctl", () => {
    const root = fakeRoot({ 'proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1' });
    const { causes } = diagnoseNamespaces({ root, uid: 1000, attempt: failed('Operation not permitted') });
    expect(causes.map((c) => c.id)).toEqual(['apparmor']);
    expect(causes[0]?.cause).toContain('kernel.apparmor_restrict_unprivileged_userns=1');
    expect(causes[0]?.fix).toMatch(/profile bwrap \/\S*bwrap flags=\(unconfined\) \{ userns, \}/);
    expect(causes[0]?.fix).toContain('sysctl -w kernel.apparmor_restrict_unprivileged_userns=0');
    // 0: AppArmor allows them; the cause is then elsewhere.
    const off = fakeRoot({ 'proc/sys/kernel/apparmor_restrict_unprivileged_userns': '0' });
    expect(ids(off, 1000, failed('Operation not permitted'))).toEqual(['unknown']);
  });

  it('user.max_user_namespaces=0, with its fix', () => {
    const root = fakeRoot({ 'proc/sys/user/max_user_namespaces': '0' });
    const { causes } = diagnoseNamespaces({ root, uid: 1000, attempt: failed('No space left on device') });
    expect(causes.map((c) => c.id)).toEqual(['max_user_namespaces']);
    expect(causes[0]?.fix).toContain('sysctl -w user.max_user_namespaces=15000');
  });

  it('kernel.unprivileged_userns_clone=0 (Debian before 11), with its fix', () => {
    const root = fakeRoot({ 'proc/sys/kernel/unprivileged_userns_clone': '0' });
    const { causes } = diagnoseNamespaces({ root, uid: 1000, attempt: failed('Operation not permitted') });
    expect(causes.map((c) => c.id)).toEqual(['unprivileged_userns_clone']);
    expect(causes[0]?.fix).toContain('sysctl -w kernel.unprivileged_userns_clone=1');
    expect(ids(fakeRoot({ 'proc/sys/kernel/unprivileged_userns_clone': '1' }), 1000, worked)).toEqual([]);
  });

  it('the user namespace sysctls do not matter to a root server (bwrap makes none then)', () => {
    const root = fakeRoot(
      {
        'proc/sys/user/max_user_namespaces': '0',
        'proc/sys/kernel/unprivileged_userns_clone': '0',
        'proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1',
      },
      { capEff: ALL_CAPS },
    );
    expect(ids(root, 0, worked)).toEqual([]);
  });

  it('root without CAP_SYS_ADMIN: in a container (/.dockerenv, /run/.containerenv) or not', () => {
    const docker = fakeRoot({ '.dockerenv': '' }, { capEff: NO_SYS_ADMIN });
    const podman = fakeRoot({ 'run/.containerenv': '' }, { capEff: NO_SYS_ADMIN });
    const bare = fakeRoot({}, { capEff: NO_SYS_ADMIN });
    const eperm = failed('Operation not permitted');
    const docked = diagnoseNamespaces({ root: docker, uid: 0, attempt: eperm }).causes;
    expect(docked.map((c) => c.id)).toEqual(['container']);
    expect(docked[0]?.cause).toContain(
      `without CAP_SYS_ADMIN (CapEff ${NO_SYS_ADMIN}) in a Docker container`,
    );
    expect(docked[0]?.fix).toContain('--cap-add SYS_ADMIN');
    expect(diagnoseNamespaces({ root: podman, uid: 0, attempt: eperm }).causes[0]?.cause).toContain(
      'a Podman container (/run/.containerenv)',
    );
    expect(ids(bare, 0, eperm)).toEqual(['cap_sys_admin']);
    // With CAP_SYS_ADMIN a root server in a container is fine.
    expect(ids(fakeRoot({ '.dockerenv': '' }, { capEff: ALL_CAPS }), 0, worked)).toEqual([]);
  });

  it('a container that denies a non-root server its namespaces, with no other cause seen', () => {
    const root = fakeRoot({ '.dockerenv': '' });
    const { causes } = diagnoseNamespaces({ root, uid: 1000, attempt: failed('Operation not permitted') });
    expect(causes.map((c) => c.id)).toEqual(['container']);
    expect(causes[0]?.fix).toContain('--security-opt seccomp=unconfined');
  });

  it('a seccomp filter that denies unshare: Seccomp 2 and the real attempt fails with EPERM', () => {
    const root = fakeRoot({}, { seccomp: '2', capEff: ALL_CAPS });
    const eperm = 'unshare: unshare failed: Operation not permitted';
    const { causes } = diagnoseNamespaces({ root, uid: 0, attempt: failed(eperm) });
    expect(causes.map((c) => c.id)).toEqual(['seccomp']);
    expect(causes[0]?.cause).toContain('Seccomp: 2');
    expect(causes[0]?.cause).toContain(eperm);
    expect(causes[0]?.fix).toContain('--security-opt seccomp=unconfined');
    // A filter that lets unshare through is no cause; nor is ENOSPC (a limit, not a filter).
    expect(ids(root, 0, worked)).toEqual([]);
    expect(ids(root, 1000, failed('No space left on device'))).toEqual(['unknown']);
    // Without unshare to try with, a filter is named as what it may be.
    expect(ids(root, 0, () => undefined)).toEqual(['seccomp']);
    // Seccomp 2 and a limit of 0: both are named.
    const both = fakeRoot({ 'proc/sys/user/max_user_namespaces': '0' }, { seccomp: '2' });
    expect(ids(both, 1000, failed('Operation not permitted'))).toEqual(['max_user_namespaces', 'seccomp']);
  });

  it('a failure with no known cause says what unshare said', () => {
    const { causes } = diagnoseNamespaces({
      root: fakeRoot({}),
      uid: 1000,
      attempt: failed('Invalid argument'),
    });
    expect(causes).toEqual([
      expect.objectContaining({ id: 'unknown', cause: 'unshare --user fails here: Invalid argument' }),
    ]);
  });

  it('explainCauses: "Cause: … Fix: …" per cause, nothing for none', () => {
    const root = fakeRoot({ 'proc/sys/user/max_user_namespaces': '0' });
    const { causes } = diagnoseNamespaces({ root, uid: 1000, attempt: failed('No space left on device') });
    expect(explainCauses(causes)).toMatch(
      /^Cause: user namespaces are switched off: .*\. Fix: sysctl -w .*\.$/,
    );
    expect(explainCauses([])).toBe('');
  });
});

describe('on this machine', () => {
  const root = process.getuid?.() === 0;

  it('the real attempt makes the namespaces bubblewrap needs, and no cause is named', () => {
    const diagnosis = diagnoseNamespaces();
    expect(diagnosis.root).toBe(root);
    expect(diagnosis.attempt).toEqual({
      ok: true,
      command: root ? 'unshare --mount --net true' : 'unshare --user --map-root-user --mount true',
    });
    expect(diagnosis.causes).toEqual([]);
  });

  it('tryNamespaces as a non-root user tries a user namespace it maps itself into', () => {
    expect(tryNamespaces(false)).toEqual({
      ok: true,
      command: 'unshare --user --map-root-user --mount true',
    });
  });
});
