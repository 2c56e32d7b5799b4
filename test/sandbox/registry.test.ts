// How the registry picks a backend, above all what `auto` does when namespaces fail:
// landlock if the kernel has it, else on Linux no code runs. Real backends where this machine has
// them (namespaces work here), fakes for the states it is not in.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type Availability,
  BackendRegistry,
  type Diagnosis,
  NamespaceBackend,
  SubprocessBackend,
} from '../../src/sandbox/index.js';
import { LandlockBackend } from '../../src/sandbox/landlock/index.js';

class Fake extends NamespaceBackend {
  probes = 0;
  constructor(private readonly answer: Availability) {
    super();
  }
  override async probe() {
    this.probes++;
    return this.answer;
  }
}

class FakeLandlock extends LandlockBackend {
  probes = 0;
  constructor(private readonly answer: Availability) {
    super();
  }
  override async probe() {
    this.probes++;
    return this.answer;
  }
}

const unavailable = () => new Fake({ available: false, reason: 'bwrap: Creating new namespace failed' });
const DENIED: Diagnosis = {
  root: false,
  attempt: {
    ok: false,
    command: 'unshare --user --map-root-user --mount true',
    error: 'No space left on device',
  },
  causes: [
    {
      id: 'max_user_namespaces',
      cause: 'user.max_user_namespaces=0',
      fix: 'sysctl -w user.max_user_namespaces=15000',
    },
  ],
};

let stderr: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  stderr = [];
});
function captureStderr(): void {
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr.push(String(chunk));
    return true;
  });
}

describe('BackendRegistry', () => {
  it('probes lazily: constructing the registry starts nothing', () => {
    const fake = unavailable();
    new BackendRegistry('auto', fake);
    expect(fake.probes).toBe(0);
  });

  it('namespace requested but unavailable is SANDBOX_UNAVAILABLE with the reason', async () => {
    await expect(new BackendRegistry('namespace', unavailable()).get()).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      message: expect.stringContaining('Creating new namespace failed'),
    });
  });

  it('auto picks namespace when it works here, and never looks at Landlock then', async () => {
    const landlock = new FakeLandlock({ available: true });
    const registry = new BackendRegistry('auto', new NamespaceBackend(), undefined, {
      landlock,
      landlockAbi: () => 7,
    });
    expect((await registry.get()).mode).toBe('namespace');
    expect(landlock.probes).toBe(0);
  });

  it('auto on Linux without namespaces uses landlock when the kernel has it, and says why', async () => {
    captureStderr();
    const landlock = new FakeLandlock({ available: true });
    const namespace = unavailable();
    const registry = new BackendRegistry('auto', namespace, undefined, {
      landlock,
      landlockAbi: () => 4,
      diagnose: () => DENIED,
      platform: 'linux',
    });
    expect(await registry.get()).toBe(landlock);
    expect(await registry.get()).toBe(landlock);
    expect([namespace.probes, landlock.probes]).toEqual([1, 1]);
    const warning = stderr.join('');
    expect(warning).toMatch(/^codexec warn: sandbox mode "auto" uses landlock \(Landlock ABI 4/);
    expect(warning).toContain('Creating new namespace failed');
    expect(warning).toContain(
      'Cause: user.max_user_namespaces=0. Fix: sysctl -w user.max_user_namespaces=15000.',
    );
  });

  it('auto on Linux refuses to run code when neither works: cause, fix and the explicit opt-out', async () => {
    let diagnosed = 0;
    const landlock = new FakeLandlock({ available: true });
    const registry = new BackendRegistry('auto', unavailable(), undefined, {
      landlock,
      landlockAbi: () => 0,
      diagnose: () => {
        diagnosed++;
        return DENIED;
      },
      platform: 'linux',
    });
    for (let i = 0; i < 2; i++)
      await expect(registry.get()).rejects.toMatchObject({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringMatching(
          /^sandbox mode "auto" will not run code here: the namespace sandbox cannot start \(bwrap: Creating new namespace failed\) and this kernel offers no Landlock \(ABI 0\).*Cause: user\.max_user_namespaces=0\. Fix: sysctl -w user\.max_user_namespaces=15000\. To run code WITHOUT isolation anyway, set CODEXEC_SANDBOX_MODE=subprocess explicitly\./,
        ),
      });
    expect(landlock.probes).toBe(0); // ABI 0: there is nothing to probe
    expect(diagnosed).toBe(1); // it runs unshare: once per registry, like the namespace probe
  });

  it('auto refuses too when the kernel has Landlock but its probe fails, naming both reasons', async () => {
    const landlock = new FakeLandlock({ available: false, reason: 'landlock_restrict_self: EPERM' });
    const registry = new BackendRegistry('auto', unavailable(), undefined, {
      landlock,
      landlockAbi: () => 6,
      diagnose: () => ({ ...DENIED, causes: [] }),
      platform: 'linux',
    });
    const refusal = registry.get();
    await expect(refusal).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    const message = (await refusal.catch((error: Error) => error)) as Error;
    expect(message.message).toContain(
      'Landlock (ABI 6) could not start a probe either (landlock_restrict_self: EPERM)',
    );
    expect(message.message).toContain('set CODEXEC_SANDBOX_MODE=subprocess explicitly');
    expect(message.message).not.toContain('Cause:');
  });

  it('off Linux auto still falls back to subprocess with its loud warning, probing once', async () => {
    captureStderr();
    const namespace = unavailable();
    const registry = new BackendRegistry('auto', namespace, undefined, {
      platform: 'darwin',
      landlockAbi: () => {
        throw new Error('not asked off Linux');
      },
    });
    expect((await registry.get()).mode).toBe('subprocess');
    expect((await registry.get()).mode).toBe('subprocess');
    expect(namespace.probes).toBe(1);
    expect(stderr.join('')).toContain('Code runs in "subprocess" mode, which does NOT confine');
  });

  it('landlock requested: its own backend, with the namespace settings, refused while unavailable', async () => {
    const namespace = new NamespaceBackend({ cgroups: false });
    const registry = new BackendRegistry('landlock', namespace);
    const landlock = await registry.landlock();
    expect(landlock).toBeInstanceOf(LandlockBackend);
    expect(await registry.landlock()).toBe(landlock);
    expect(landlock.mode).toBe('landlock');
    expect(landlock.settings).toEqual({ cgroups: false });
    const probe = await landlock.probe();
    if (probe.available) expect((await registry.get()).mode).toBe('landlock');
    else
      await expect(registry.get()).rejects.toMatchObject({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringContaining(`sandbox mode "landlock" is not available here: ${probe.reason}`),
      });
  });

  it('each backend says what it can do, the same whichever settings it was made with', async () => {
    const namespace = new NamespaceBackend({ cgroups: false });
    expect([namespace.mode, namespace.capabilities]).toEqual([
      'namespace',
      {
        ownHome: true,
        egress: 'socket',
        processesOutlive: false,
        terminal: 'own',
        signalsGroup: false,
        ownInterpreters: false,
      },
    ]);
    const landlock = await new BackendRegistry('landlock', namespace).landlock();
    expect([landlock.mode, landlock.capabilities]).toEqual([
      'landlock',
      {
        ownHome: true,
        egress: 'port',
        processesOutlive: true,
        terminal: 'handed',
        signalsGroup: false,
        ownInterpreters: false,
      },
    ]);
    expect(new SubprocessBackend().capabilities).toMatchObject({
      ownHome: false,
      egress: 'none',
      signalsGroup: true,
    });
  });
});
