import type { Config } from '../config/index.js';
import { loadRules, policyPath } from '../policy/index.js';
import { type InterpreterKind, Interpreters } from '../runtimes/index.js';
import {
  ContainerBackend,
  type ContainerEngine,
  describeRuntime,
  findEngine,
} from '../sandbox/container/index.js';
import type { SandboxBackend } from '../sandbox/index.js';
import { configOrExit } from './config.js';
import { landlockLines, line, namespaceLines, sandboxSummary } from './doctor-sandbox.js';
import { storeLines } from './doctor-store.js';

const KINDS: readonly InterpreterKind[] = ['python', 'node', 'bash'];

/** Report what works on this machine, layer by layer. Always exits 0: missing layers are information. */
export async function doctorCommand(): Promise<void> {
  // Settings that would stop a server are reported first; everything else is still checked.
  const problems: string[] = [];
  const config = configOrExit({}, problems);
  console.log('codexec doctor');
  for (const problem of problems) line(false, 'configuration', `${problem} (a server would not start)`);
  if (problems.length > 0) process.exitCode = 2; // as the server would exit
  console.log(`  configured sandbox mode: ${config.sandboxMode} (CODEXEC_SANDBOX_MODE)`);
  const facts = await sandboxSummary(config);
  console.log(`  network for code:        ${config.network} (CODEXEC_NETWORK)`);
  if (config.network === 'allowlist') {
    const list = (rules: readonly { text: string }[]) => rules.map((rule) => rule.text).join(', ') || 'none';
    console.log(`  hosts code may reach:    ${list(config.egress.allowed)} (CODEXEC_ALLOWED_DOMAINS)`);
    console.log(`  hosts never reached:     ${list(config.egress.denied)} (CODEXEC_DENIED_DOMAINS)`);
  }
  gate(config);
  quotas(config);
  await storeLines(config);
  console.log('\nnamespace sandbox layers');
  for (const layer of facts.namespace.layers()) line(layer.ok, layer.name, layer.detail);
  const probe = await facts.namespace.probe();
  namespaceLines(facts, probe);
  line(
    probe.available,
    'sandbox run',
    probe.available ? 'a real sandbox started and exited 0' : `${probe.reason}`,
  );
  const landlock = await landlockLines(facts);
  await containers(config);
  console.log('\ninterpreters');
  const sandbox = probe.available ? facts.namespace : landlock.available ? facts.landlock : undefined;
  await interpreters(config, sandbox);
  await facts.close();
}

/** Which gate is active: is code execution on, who approves, which languages, which rules. */
function gate(config: Config): void {
  const { enabled, approval, approvalTimeoutMs, allowedRuntimes } = config.gate;
  const asks = {
    auto: 'never asks; deny rules still refuse',
    ask: 'every run asks the client (MCP elicitation)',
    risky: 'asks the client (MCP elicitation) only for runs a policy rule marks ask',
  }[approval];
  console.log('\napproval gate');
  console.log(
    `  code execution:          ${enabled ? 'enabled' : 'disabled: no tool that runs code'} (CODEXEC_ENABLED)`,
  );
  console.log(`  approval:                ${approval}: ${asks} (CODEXEC_APPROVAL)`);
  if (approval !== 'auto')
    console.log(`  approval timeout:        ${approvalTimeoutMs} ms (CODEXEC_APPROVAL_TIMEOUT_MS)`);
  console.log(`  allowed runtimes:        ${allowedRuntimes.join(', ')} (CODEXEC_ALLOWED_RUNTIMES)`);
  try {
    const rules = loadRules(config);
    const count = (action: string) => rules.rules.filter((rule) => rule.action === action).length;
    const from = rules.source ? `built-ins + ${rules.source}` : `built-ins (no ${policyPath(config)})`;
    console.log(
      `  policy rules:            ${rules.rules.length} (${count('deny')} deny, ${count('ask')} ask, ` +
        `${count('allow')} allow) from ${from}`,
    );
  } catch (error) {
    line(false, 'policy rules', `${(error as Error).message} — codexec serve will not start`);
  }
}

/** CODEXEC_QUOTAS: each principal's (and `*`'s) quotas as the file gives them. */
function quotas(config: Config): void {
  console.log('\nquotas');
  if (!config.quotas) {
    console.log('  none (CODEXEC_QUOTAS not set)');
    return;
  }
  console.log(`  from:                    ${config.quotas.file} (CODEXEC_QUOTAS)`);
  for (const [principal, quota] of Object.entries(config.quotas.table)) {
    const fields = Object.entries(quota).map(([name, value]) => `${name}=${value}`);
    const who = principal === '*' ? '* (everyone else)' : principal;
    console.log(`  ${`${who}:`.padEnd(24)} ${fields.join(', ') || 'no limits'}`);
  }
}

/** Sandbox mode docker: the engine that answers, the runtime it runs, and the image it would run. */
async function containers(config: Config): Promise<void> {
  console.log('\ncontainer sandbox (CODEXEC_SANDBOX_MODE=docker)');
  const asked = config.docker.runtime;
  let engine: ContainerEngine;
  try {
    engine = await findEngine(config.docker.engine, asked);
    line(
      true,
      'engine',
      `${engine.name} ${engine.version} at ${engine.binary} (CODEXEC_CONTAINER_ENGINE=${config.docker.engine})`,
    );
  } catch (error) {
    line(false, 'engine', (error as Error).message);
    return;
  }
  try {
    const used = await describeRuntime(engine);
    const source = asked ? `CODEXEC_DOCKER_RUNTIME=${asked}` : "the engine's default; CODEXEC_DOCKER_RUNTIME";
    line(true, 'runtime', `${used} (${source})`);
  } catch (error) {
    line(false, 'runtime', `${asked ?? 'default'}: ${(error as Error).message}`);
  }
  const backend = new ContainerBackend(config.docker);
  const probe = await backend.probe();
  const image = backend.image;
  const found = image && Object.entries(image.interpreters).map(([kind, path]) => `${kind} ${path}`);
  line(
    probe.available,
    'image',
    probe.available
      ? `${config.docker.image} (${found?.join(', ') || 'no codexec.* interpreter labels'})`
      : `${probe.reason}`,
  );
  if (probe.available) {
    const direct = backend.oneShotRuntime;
    console.log(
      `  one-shot containers:     ${direct ? `started by ${direct} itself (the engine keeps images and sessions)` : `started by ${engine.name} (a root server with podman starts them through the OCI runtime)`}`,
    );
  }
  console.log(
    `  limits per container:    memory ${config.docker.memory}, ${config.docker.cpu} CPU, network ${config.docker.network}`,
  );
  await backend.shutdown();
}

/** Each interpreter's real binary, and whether a sandbox can actually run it. */
async function interpreters(config: Config, sandbox: SandboxBackend | undefined): Promise<void> {
  const resolver = new Interpreters(config.interpreters);
  for (const kind of KINDS) {
    let binary: string;
    try {
      binary = await resolver.get(kind);
    } catch (error) {
      line(false, kind, (error as Error).message);
      continue;
    }
    if (!sandbox) {
      line(true, kind, `${binary} (no sandbox starts here: not checked inside one)`);
      continue;
    }
    const result = await versionInSandbox(sandbox, binary);
    line(
      result.ok,
      kind,
      result.ok
        ? `${binary} — runs in the sandbox (${result.output})`
        : `${binary} — the sandbox cannot run it (${result.output}); set CODEXEC_${kind.toUpperCase()} to a ` +
            'world-readable interpreter such as /usr/bin/' +
            (kind === 'python' ? 'python3' : kind),
    );
  }
}

async function versionInSandbox(
  sandbox: SandboxBackend,
  binary: string,
): Promise<{ ok: boolean; output: string }> {
  const proc = sandbox.spawn({
    argv: [binary, '--version'],
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    writablePaths: [],
    readablePaths: [],
    limits: { memoryMb: 256, maxProcs: 16, maxFileMb: 1 },
    network: 'none',
    stdin: 'ignore',
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  proc.stdout.on('data', collect);
  proc.stderr.on('data', collect);
  const exit = await proc.exited;
  await proc.dispose();
  const first = output.trim().split('\n')[0] ?? '';
  return { ok: exit.code === 0, output: first || `exit ${exit.code ?? exit.signal}` };
}
