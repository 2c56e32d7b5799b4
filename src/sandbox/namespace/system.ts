// What every namespace sandbox sees of the system: the host's system directories, and /etc as one
// shared copy of the entries a sandbox may see (etc.ts) holding, for a root server, the drop
// program (drop.ts) once it has proven to run here.
import { join } from 'node:path';
import { packagePath } from '../../util/index.js';
import {
  BOUND_ETC,
  COPIED_ETC,
  etcEntries,
  type HostSetup,
  type SystemMount,
  systemMounts,
} from '../host/index.js';
import { DROP_NAME, dropProgram, dropRuns } from './drop.js';
import { EtcCopies, type EtcLease } from './etc.js';
import { DirViews } from './views.js';

/** A sandbox's system mounts, the copy of /etc they hold until released, and its drop program. */
export interface SandboxSystem {
  readonly mounts: readonly SystemMount[];
  readonly etc?: EtcLease;
  /** The drop program's path in the sandbox, when the copy has one that runs (a root server's). */
  readonly drop?: string;
  /** Copies of the driver files sandboxes read: one bind per sandbox for them (views.ts). */
  readonly views?: DirViews;
}

export class SystemView {
  private etc: EtcCopies | undefined;
  private readonly views: DirViews | undefined;
  private etcMounts: { readonly dir: string; readonly mounts: readonly SystemMount[] } | undefined;
  /**
   * Whether the copies hold a drop program (drop.ts) that runs here: false without one, undefined
   * until the first copy has proven it.
   */
  private works: boolean | undefined;

  /**
   * `etcCopy` false: bind each /etc entry a sandbox sees instead of one copy of them; `drop` false:
   * a root server drops to the sandbox user with setpriv, not the drop program; `driverCopy`
   * false: bind each driver file a sandbox reads instead of one copy of them.
   */
  constructor(
    private readonly options: {
      readonly etcCopy?: boolean;
      readonly drop?: boolean;
      readonly driverCopy?: boolean;
    },
  ) {
    this.views = options.driverCopy === false ? undefined : new DirViews(packagePath('drivers'));
  }

  /** The drop program's path in the sandbox, once a copy has shown it runs. */
  get drop(): string | undefined {
    return this.works ? `/etc/${DROP_NAME}` : undefined;
  }

  /** The system of a sandbox started now. */
  now(host: HostSetup): SandboxSystem {
    const views = this.views && { views: this.views };
    if (this.options.etcCopy === false) return { mounts: host.system, ...views };
    if (!this.etc) {
      const program = host.root && this.options.drop !== false ? dropProgram() : undefined;
      const files = program ? [{ name: DROP_NAME, content: program, mode: 0o555 }] : [];
      const bound = BOUND_ETC.filter((name) => !COPIED_ETC.includes(name));
      this.etc = new EtcCopies('/etc', [...etcEntries(), ...COPIED_ETC], bound, {
        files,
        linksOnly: ['alternatives'],
      });
      if (!program) this.works = false;
    }
    const etc = this.etc.acquire();
    if (!etc) return { mounts: host.system, ...views };
    this.works ??= dropRuns(join(etc.dir, DROP_NAME));
    if (this.etcMounts?.dir !== etc.dir)
      this.etcMounts = { dir: etc.dir, mounts: systemMounts('/', etc.dir) };
    return {
      mounts: this.etcMounts.mounts,
      etc,
      ...(this.works && { drop: `/etc/${DROP_NAME}` }),
      ...views,
    };
  }
}
