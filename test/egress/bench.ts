// The bench the egress proxy's tests share: three origins on loopback (plain HTTP, HTTPS with a
// certificate the openssl CLI makes, and one never listed), lanes closed after each test, users
// with their records. `bench()` registers the hooks of the file that calls it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  type EgressConnection,
  EgressRules,
  type Lane,
  type LaneOptions,
  type LaneUser,
  parseRules,
} from '../../src/egress/index.js';
import { openLane } from '../../src/egress/proxy.js';
import { type Handler, type Origin, type Pem, selfSigned, startOrigin } from './clients.js';

export interface Bench {
  /** 1 MB of random bytes, served at /big. */
  readonly BIG: Buffer;
  /** A directory of the test file's own (lanes' sockets go in directories below it). */
  readonly root: string;
  readonly pem: Pem;
  /** Plain HTTP: /, /big, /echo, /redirect (to `other`), /headers, /never (no answer). */
  readonly web: Origin;
  /** HTTPS, the same paths. */
  readonly secure: Origin;
  /** Plain HTTP, never listed. */
  readonly other: Origin;
  /** A lane on a Unix socket in a fresh directory, or on 127.0.0.1; closed after the test. */
  open(kind: 'socket' | 'tcp', user?: LaneUser, options?: LaneOptions): Promise<Lane>;
}

export function bench(): Bench {
  const BIG = randomBytes(1 << 20);
  const root = mkdtempSync(join(tmpdir(), 'codexec-egress-'));
  const lanes: Lane[] = [];
  const state: { pem?: Pem; web?: Origin; secure?: Origin; other?: Origin } = {};
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the bench is not up yet (beforeAll)');
    return value;
  };

  beforeAll(async () => {
    state.pem = selfSigned();
    const other = await startOrigin((_req, res) => res.end('other'));
    state.other = other;
    const handler: Handler = (req, res) => {
      if (req.url === '/big') return res.end(BIG);
      if (req.url === '/never') return; // holds the request open
      if (req.url === '/echo') return void req.pipe(res);
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://localhost:${other.port}/` });
        return res.end();
      }
      if (req.url?.startsWith('/headers'))
        return res.end(JSON.stringify({ url: req.url, headers: req.rawHeaders }));
      res.setHeader('x-origin', 'yes');
      res.end('hello');
    };
    state.web = await startOrigin(handler);
    state.secure = await startOrigin(handler, state.pem);
  });
  afterEach(async () => {
    await Promise.all(lanes.splice(0).map((lane) => lane.close()));
  });
  afterAll(async () => {
    await Promise.all([state.web?.close(), state.secure?.close(), state.other?.close()]);
    rmSync(root, { recursive: true, force: true });
  });

  return {
    BIG,
    root,
    get pem() {
      return ready(state.pem);
    },
    get web() {
      return ready(state.web);
    },
    get secure() {
      return ready(state.secure);
    },
    get other() {
      return ready(state.other);
    },
    async open(kind, user, options) {
      const where =
        kind === 'socket'
          ? { socket: join(mkdtempSync(join(root, 'lane-')), 'egress.sock') }
          : { tcp: true as const };
      const lane = await openLane(where, user, options);
      lanes.push(lane);
      return lane;
    },
  };
}

/** A user of `allowed` (and `denied`, a call's `narrow`, an `ask`), and the records it gets. */
export function userOf(
  allowed: string,
  more: { denied?: string; ask?: LaneUser['ask']; narrow?: string } = {},
): { user: LaneUser; records: EgressConnection[] } {
  const records: EgressConnection[] = [];
  let rules = new EgressRules(parseRules(allowed, 'allowed'), parseRules(more.denied ?? '', 'denied'));
  if (more.narrow !== undefined) rules = rules.narrow(parseRules(more.narrow, 'call'));
  const user: LaneUser = {
    rules,
    record: (connection) => records.push(connection),
    ...(more.ask && { ask: more.ask }),
  };
  return { user, records };
}
