// The network of the install steps that run a package's code: `npm rebuild` (its install scripts,
// in the code sandbox) and a docker session's pip or npm (in a container). Under
// CODEXEC_NETWORK=allowlist they get a lane of the egress proxy of their own, with the server's
// lists (install_package takes no allowed_domains), so package code reaches only listed hosts;
// under `host` and `none` they keep the host's network an install needs (docs/security.md
// "Installs"). The host step before them (pip / npm as the operator's own) is not package code and
// keeps the operator's network in every setting.
import type { Config } from '../config/index.js';
import { callRules, deniedOf, EgressRecord } from '../egress/index.js';
import { openSandboxLane } from '../engine/index.js';
import type { Capabilities, SandboxSpec } from '../sandbox/index.js';

/**
 * The operator's proxy settings (HTTP_PROXY, npm_config_https_proxy, npm_config_noproxy,
 * PIP_PROXY, …, any case): behind a lane the only route out is the lane, so none of them may
 * stand beside its variables (npm reads NPM_CONFIG_PROXY as well as npm_config_proxy).
 */
const PROXY_VARIABLE = /^(npm_config_|pip_)?(https?_|no_?|all_)?proxy$/i;

export interface PackageNetwork {
  /** The spec's network fields. */
  readonly spec: Pick<SandboxSpec, 'network' | 'egress'>;
  /** `env` for the step: the lane's proxy variables in place of the operator's (as is without a lane). */
  env(env: Readonly<Record<string, string>>): Record<string, string>;
  /** The step's refused hosts so far (a result's `network_denied`); undefined without a lane or refusal. */
  denied(): Array<{ host: string; port: number }> | undefined;
  /** Closes the lane (nothing without one). */
  close(): Promise<void>;
}

const HOST: PackageNetwork = {
  spec: { network: 'host' },
  env: (env) => ({ ...env }),
  denied: () => undefined,
  close: async () => {},
};

/**
 * The network of one such step, whose sandbox (reaching the proxy as `egress` says) has `dir`
 * among its writable paths (the lane's socket goes there); `python` runs the forwarder.
 */
export async function openPackageNetwork(
  config: Pick<Config, 'network' | 'egress'>,
  egress: Capabilities['egress'],
  dir: string,
  python: () => Promise<string>,
): Promise<PackageNetwork> {
  if (config.network !== 'allowlist') return HOST;
  const record = new EgressRecord(callRules(config));
  const allowed = config.egress.allowed;
  const opened = await openSandboxLane({ egress, workspace: dir, python, user: record, allowed });
  return {
    spec: { network: 'allowlist', egress: opened.endpoint },
    env: (env) => ({
      ...Object.fromEntries(Object.entries(env).filter(([name]) => !PROXY_VARIABLE.test(name))),
      ...opened.env,
    }),
    denied: () => deniedOf(record.since()),
    close: () => opened.lane.close(),
  };
}
