// `codexec doctor`'s sandbox sections: which mode auto picks and why, why namespaces fail here (each
// cause with its fix), and what Landlock this kernel offers, rule by rule.
import { type Config, runRoots, type SandboxMode } from '../config/index.js';
import {
  type Availability,
  BackendRegistry,
  type Diagnosis,
  describePick,
  diagnoseNamespaces,
  NamespaceBackend,
  NEST,
  NODE_FORKS,
  type SandboxBackend,
} from '../sandbox/index.js';
import { LandlockBackend, landlockAbi } from '../sandbox/landlock/index.js';

/** What each Landlock ABI adds (the kernel's landlock.h, ABI 1 to 7). */
export const LANDLOCK_ABI_RULES: readonly string[] = [
  'filesystem: read, write, execute, make and remove files only beneath allowed paths',
  'REFER: link and rename files from one directory to another',
  'TRUNCATE: truncate files',
  'TCP: bind and connect only to allowed ports',
  'IOCTL_DEV: ioctl on device files',
  'scoped signals and abstract unix sockets: none reach a process outside the sandbox',
  'audit: logging flags (which denials reach the audit log)',
];

export interface SandboxFacts {
  readonly namespace: NamespaceBackend;
  readonly landlock: LandlockBackend;
  readonly diagnosis: Diagnosis;
  readonly abi: number;
  /** The backend a run would get under the configured mode; undefined: runs are refused. */
  readonly inUse: SandboxBackend | undefined;
  /** Release what the backends picked for the summary keep; after the last use of them. */
  close(): Promise<void>;
}

/** The configured mode's backend, and what auto would pick (both printed in the summary). */
export async function sandboxSummary(config: Config): Promise<SandboxFacts> {
  const namespace = new NamespaceBackend({ totals: config.totals, roots: runRoots(config) });
  const landlock = new LandlockBackend({ totals: config.totals, roots: runRoots(config) });
  const diagnosis = diagnoseNamespaces();
  const abi = landlockAbi();
  // What the picked backends keep (a container backend's template and runtime state) goes at close().
  const registries: BackendRegistry[] = [];
  const pick = async (mode: SandboxMode) => {
    const options = { landlock, diagnose: () => diagnosis, landlockAbi: () => abi };
    const registry = new BackendRegistry(mode, namespace, config.docker, options);
    registries.push(registry);
    try {
      return await registry.get();
    } catch (error) {
      return error as Error;
    }
  };
  const configured = await pick(config.sandboxMode);
  const inUse = configured instanceof Error ? undefined : configured;
  console.log(
    `  mode in use:             ${configured instanceof Error ? `none — ${configured.message}` : configured.mode}`,
  );
  const auto = config.sandboxMode === 'auto' ? configured : await pick('auto');
  console.log(`  auto will pick:          ${describePick(auto, abi)}`);
  const close = async () => {
    for (const registry of registries) await registry.shutdown();
  };
  return { namespace, landlock, diagnosis, abi, inUse, close };
}

/** The namespace layers' last lines: whether namespaces can be made here, and if not why. */
export function namespaceLines(facts: SandboxFacts, probe: Availability): void {
  const { attempt, causes, root } = facts.diagnosis;
  const works = attempt === undefined ? 'unshare not found: not tried' : `${attempt.command} works`;
  if (attempt?.ok !== false)
    line(
      attempt !== undefined,
      'namespaces',
      `${works}${root ? ' (as root bubblewrap needs no user namespace: code runs as uid 65534)' : ''}`,
    );
  else line(false, 'namespaces', `${attempt.command} fails: ${attempt.error}`);
  if (root) {
    // A root server's warm runs: what scripts/build-native.mjs built here.
    const built = 'built by npm run build';
    const none = 'not built (no C compiler at build time)';
    line(
      NODE_FORKS,
      'node forks',
      NODE_FORKS ? `${built}: warm node runs are forked` : `${none}: node starts per run`,
    );
    line(
      NEST !== undefined,
      'nest',
      NEST ? `${built}: zygote runs' sandboxes come from a template` : `${none}: bwrap makes each sandbox`,
    );
  }
  if (probe.available && attempt?.ok !== false) return;
  for (const cause of causes) {
    console.log(`  ${'cause'.padEnd(8)} ${cause.id.padEnd(20)} ${cause.cause}`);
    console.log(`  ${'fix'.padEnd(8)} ${''.padEnd(20)} ${cause.fix}`);
  }
  if (causes.length === 0 && !probe.available)
    console.log(
      `  ${'cause'.padEnd(8)} ${'not found'.padEnd(20)} namespaces can be made here; see "sandbox run"`,
    );
}

/** Sandbox mode landlock: the kernel's ABI, the rules each ABI adds, and a real probe. */
export async function landlockLines(facts: SandboxFacts): Promise<Availability> {
  const { abi } = facts;
  console.log('\nlandlock sandbox (CODEXEC_SANDBOX_MODE=landlock)');
  line(
    abi > 0,
    'Landlock ABI',
    abi > 0
      ? `${abi}`
      : '0: this kernel offers no Landlock (not built in, or not among the active LSMs: add landlock to lsm= ' +
          'on the kernel command line)',
  );
  LANDLOCK_ABI_RULES.forEach((rule, i) => {
    console.log(`  ${''.padEnd(8)} ABI ${i + 1} ${(i < abi ? 'yes' : 'no').padEnd(4)} ${rule}`);
  });
  const probe = await facts.landlock.probe();
  line(
    probe.available,
    'sandbox run',
    probe.available ? 'a real sandbox started and exited 0' : `${probe.reason}`,
  );
  return probe;
}

export function line(ok: boolean, name: string, detail: string): void {
  console.log(`  ${(ok ? 'OK' : 'missing').padEnd(8)} ${name.padEnd(20)} ${detail}`);
}
