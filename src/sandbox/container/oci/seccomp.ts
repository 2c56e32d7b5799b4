// The engine's seccomp profile, narrowed for code. podman's default profile lets any process make
// a user namespace (clone/unshare) and use the kernel keyrings: in a namespace of its own, code
// holds every capability (mount, new network namespaces, nf_tables: kernel attack surface), and a
// keyring is shared by uid across the host, a channel between runs and to the host's processes of
// that uid. docker's default profile refuses both to a container without CAP_SYS_ADMIN; this does
// the same to podman's, for every container of the server (one-shots through the bundle, the
// others through `--security-opt seccomp=`, which reads this same format).

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: a clone with none is allowed. */
const NAMESPACE_FLAGS = 0x7e020000;
const EPERM = 1;
const ENOSYS = 38;
/** Refused: they make, enter or change namespaces, or reach the keyrings. */
const REFUSED = ['unshare', 'setns', 'keyctl', 'add_key', 'request_key'];

interface Rule {
  readonly names: readonly string[];
  readonly action: string;
  readonly args?: readonly unknown[];
  readonly errnoRet?: number;
  readonly [key: string]: unknown;
}

export interface Seccomp {
  readonly syscalls?: readonly Rule[];
  readonly [key: string]: unknown;
}

export function narrowed(profile: Seccomp): Seccomp {
  const own = new Set(['clone', 'clone3']);
  const refused = new Set(REFUSED);
  const kept = (profile.syscalls ?? [])
    .map((rule) => ({
      ...rule,
      names: rule.names.filter((n) => !own.has(n) && !(rule.action === 'SCMP_ACT_ALLOW' && refused.has(n))),
    }))
    .filter((rule) => rule.names.length > 0);
  // A name the profile refuses already keeps its own rule (two rules of one call must agree).
  const refusedAlready = new Set(
    kept.filter((rule) => rule.action !== 'SCMP_ACT_ALLOW').flatMap((rule) => rule.names),
  );
  const refuse = REFUSED.filter((name) => !refusedAlready.has(name));
  return {
    ...profile,
    syscalls: [
      ...kept,
      ...(refuse.length > 0 ? [{ names: refuse, action: 'SCMP_ACT_ERRNO', errnoRet: EPERM }] : []),
      // Its flags are its first argument on x86 and arm64.
      {
        names: ['clone'],
        action: 'SCMP_ACT_ALLOW',
        args: [{ index: 0, value: NAMESPACE_FLAGS, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
      },
      // Its flags lie in memory, out of seccomp's sight: ENOSYS makes libc fall back to clone.
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
    ],
  };
}
