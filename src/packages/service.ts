import { existsSync } from 'node:fs';
import { type Config, globalPackageDirs } from '../config/index.js';
import { CodexecError } from '../errors/index.js';
import type { LogWriter } from '../logs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import type { SandboxBackend } from '../sandbox/index.js';
import { currentPrincipal, isoTime, LOCAL_PRINCIPAL } from '../util/index.js';
import { type InstallResult, type PackageEnv, PackageInstaller } from './installer.js';
import { type PackageLanguage, parsePackageSpec } from './spec.js';

/** What the session manager offers installs: a session's environment and its install record. */
export interface SessionPackageHost {
  /** The environment of live session `sessionId` for `language`; throws SESSION_NOT_FOUND. */
  packageEnv(sessionId: string, language: PackageLanguage): PackageEnv;
  recordInstall(
    sessionId: string,
    install: { package: string; version: string | null; success: boolean },
  ): Promise<void>;
}

export interface InstallRequest {
  readonly language: PackageLanguage;
  readonly package: string;
  readonly sessionId?: string | undefined;
  /** Stops the install (a cancelled call or task). */
  readonly signal?: AbortSignal | undefined;
}

export type InstallOutcome = InstallResult & {
  readonly language: PackageLanguage;
  readonly session_id: string | null;
};

/** Validates, routes (session or global environment), installs and records one package. */
export class PackageService {
  private readonly installer: PackageInstaller;
  private sessions: SessionPackageHost | undefined;

  constructor(
    private readonly config: Config,
    interpreters: Interpreters,
    private readonly logs: LogWriter,
    /** Called after the global environment changed (warm processes started earlier must go). */
    /** The code sandbox: installs' scripts and the placing of their results run in it. */
    sandbox: () => Promise<SandboxBackend>,
    private readonly onGlobalChange: () => Promise<void> = async () => {},
    secrets?: SecretsFilter,
  ) {
    this.installer = new PackageInstaller(config, interpreters, sandbox, secrets);
  }

  /** Called once by the session manager so installs can target sessions. */
  attachSessions(host: SessionPackageHost): void {
    this.sessions = host;
  }

  /** The global environment that every run of `language` can import from. */
  globalEnv(language: PackageLanguage): PackageEnv {
    const dir = globalPackageDirs(this.config, currentPrincipal())[language];
    return { language, dir, root: dir, rel: '' };
  }

  async install(request: InstallRequest): Promise<InstallOutcome> {
    const spec = parsePackageSpec(request.language, request.package, this.config.packageBlocklist);
    const env = request.sessionId
      ? this.sessionEnv(request.sessionId, request.language)
      : this.globalEnv(request.language);
    const result = await this.installer.install(env, spec, request.signal);
    const entry = { package: spec.name, version: result.version, success: result.success };
    if (request.sessionId) {
      await this.sessions?.recordInstall(request.sessionId, entry);
    } else {
      await this.logs.append('packages.jsonl', {
        type: 'package_install',
        session_id: null,
        language: request.language,
        ...entry,
        at: isoTime(),
      });
      // Warm processes carry the local principal's packages (engine/spec.ts warmFits).
      if (result.success && currentPrincipal() === LOCAL_PRINCIPAL) await this.onGlobalChange();
    }
    return { ...result, language: request.language, session_id: request.sessionId ?? null };
  }

  /** A session's environment, with the global one its code sees after it. */
  private sessionEnv(sessionId: string, language: PackageLanguage): PackageEnv {
    if (!this.sessions)
      throw new CodexecError('SESSION_NOT_FOUND', `no session ${sessionId}; start_session first`);
    const global = this.globalEnv(language).dir;
    return {
      ...this.sessions.packageEnv(sessionId, language),
      ...(existsSync(global) && { beside: [global] }),
    };
  }
}
