import { z } from 'zod';
import { parseRules } from '../../egress/rules.js';
import { ConfigError } from '../../errors/index.js';
import { expandHome } from '../../util/index.js';
import { readCredentials } from '../credentials.js';
import { readMounts } from '../mounts.js';
import { from, type Setting, setting } from './define.js';
import { path } from './values.js';

// How code is isolated: the sandbox mode, its network, the interpreters it runs, and the
// containers of sandbox mode docker.

export const SANDBOX_MODES = ['auto', 'namespace', 'landlock', 'subprocess', 'docker'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** A host list of CODEXEC_NETWORK=allowlist as rules; a malformed entry stops start-up, named. */
const hostRules = <Name extends string, S extends z.ZodType<string>>(item: Setting<Name, S>) =>
  from([item], ([text]) => parseRules(text, item.name, (message) => new ConfigError(message)));

/** A program the runs use: absent, the one on PATH (or this Node). */
const interpreter = <Name extends string>(name: Name, description: string) =>
  path(setting(name, () => z.string().min(1).optional().describe(description)));

const sandboxMode = setting('CODEXEC_SANDBOX_MODE', () =>
  z.enum(SANDBOX_MODES).default('auto').describe('How code is isolated.'),
);
const network = setting('CODEXEC_NETWORK', () =>
  z
    .enum(['none', 'host', 'allowlist'])
    .default('none')
    .describe(
      "Network for sandboxed code: none, host, or allowlist (only the hosts of CODEXEC_ALLOWED_DOMAINS, through the server's proxy).",
    ),
);
const allowedDomains = setting('CODEXEC_ALLOWED_DOMAINS', () =>
  z
    .string()
    .default('')
    .describe(
      'With CODEXEC_NETWORK=allowlist: hosts code may reach (comma list of names, *.name wildcards, IP literals; :port, else 443 and 80).',
    ),
);
const credentialsFile = setting('CODEXEC_CREDENTIALS', () =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      'With CODEXEC_NETWORK=allowlist: a JSON file of credentials code uses by placeholder, {"<ENV_NAME>": {"file", "hosts", "header"}}; the proxy puts each value in on the way to its hosts.',
    ),
);
const mountsFile = setting('CODEXEC_MOUNTS', () =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      'A JSON file of directories lent read-only to runs: [{"source": "/srv/data", "target": "/data", "principals": ["<principal>" | "*"]}] (target default: the source).',
    ),
);

export const sandbox = {
  sandboxMode,
  /** CODEXEC_MOUNTS, checked (config/mounts.ts); empty when unset. */
  mounts: from([mountsFile, sandboxMode], ([file, mode], context) =>
    file === undefined ? [] : readMounts(expandHome(file, context.home), context.home, mode),
  ),
  network,
  /** CODEXEC_CREDENTIALS, checked (config/credentials.ts); empty when unset. */
  credentials: from([credentialsFile, network, allowedDomains], ([file, net, allowed], context) =>
    file === undefined ? [] : readCredentials(expandHome(file, context.home), context.home, net, [allowed]),
  ),
  /** CODEXEC_NETWORK=allowlist: the server's lists (src/egress). */
  egress: {
    allowed: hostRules(allowedDomains),
    denied: hostRules(
      setting('CODEXEC_DENIED_DOMAINS', () =>
        z
          .string()
          .default('')
          .describe(
            'With CODEXEC_NETWORK=allowlist: hosts never reached, whatever else allows them (same form; without a port: every port).',
          ),
      ),
    ),
  },
  interpreters: {
    python: interpreter('CODEXEC_PYTHON', 'Python interpreter (default: python3 on PATH).'),
    node: interpreter('CODEXEC_NODE', 'Node interpreter (default: this Node).'),
    bash: interpreter('CODEXEC_BASH', 'Bash (default: bash on PATH).'),
  },
  docker: {
    engine: setting('CODEXEC_CONTAINER_ENGINE', () =>
      z
        .enum(['auto', 'docker', 'podman'])
        .default('auto')
        .describe(
          'Container engine for sandbox mode docker: auto (docker if its daemon answers, else podman).',
        ),
    ),
    image: setting('CODEXEC_DOCKER_IMAGE', () =>
      z
        .string()
        .min(1)
        .default('codexec-sandbox')
        .describe('Image of sandbox mode docker (`codexec image build` makes it).'),
    ),
    memory: setting('CODEXEC_DOCKER_MEMORY', () =>
      z
        .string()
        .regex(/^\d+[kmg]?$/i, 'expected e.g. 512m')
        .default('512m')
        .describe('Memory limit per container.'),
    ),
    cpu: setting('CODEXEC_DOCKER_CPU', () =>
      z.coerce.number().positive().max(1024).default(1).describe('CPUs per container.'),
    ),
    network: setting('CODEXEC_DOCKER_NETWORK', () =>
      z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a network name such as none, bridge or host')
        .default('none')
        .describe('Network of sandbox containers (none: no network).'),
    ),
    runtime: setting('CODEXEC_DOCKER_RUNTIME', () =>
      z
        .string()
        .regex(
          /^[A-Za-z0-9/][A-Za-z0-9_./-]*$/,
          'expected a runtime name such as runsc, or its absolute path',
        )
        .optional()
        .describe(
          'OCI runtime of every sandbox container, e.g. runsc (gVisor): a name the engine knows (docker: its ' +
            "daemon's runtimes) or, for podman, a path; absent: the engine's default (podman: runc where installed).",
        ),
    ),
  },
};
