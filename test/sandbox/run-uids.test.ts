// The uids of a root server's landlock runs: one per run, shared only by runs writing the same
// workspace, back to the block when their workspaces are given back; a block per live server.
import { describe, expect, it } from 'vitest';
import { BLOCK_SIZE, claimBlock, isRunIdentity, RunUids } from '../../src/sandbox/landlock/uids.js';

describe('RunUids', () => {
  it('gives each run a uid of its own, and runs writing one workspace the same', () => {
    const uids = new RunUids({ first: 1000, count: 4 });
    const a = uids.take(['/w/a']);
    const b = uids.take(['/w/b']);
    const sharing = uids.take(['/w/a']);
    expect(a.uid).not.toBe(b.uid);
    expect(sharing.uid).toBe(a.uid);
    expect([a.gid, b.gid]).toEqual([65534, 65534]);
    // A stage that writes a session's directory and a fresh one: the session's owner.
    expect(uids.take(['/w/stage', '/w/b']).uid).toBe(b.uid);
  });

  it('takes a uid back once every run holding it returned it, and hands it out again last', () => {
    const uids = new RunUids({ first: 1000, count: 3 });
    const a = uids.take(['/w/a']);
    const held = uids.take(['/w/a']);
    a.returned();
    a.returned(); // once only
    expect(uids.inUse).toBe(1);
    held.returned();
    expect(uids.inUse).toBe(0);
    const next = [uids.take(['/w/1']).uid, uids.take(['/w/2']).uid, uids.take(['/w/3']).uid];
    expect(next).toEqual([1001, 1002, 1000]);
  });

  it('refuses a run when every uid of the block is held, naming why', () => {
    const uids = new RunUids({ first: 1000, count: 2 });
    uids.take(['/w/a']);
    const b = uids.take(['/w/b']);
    expect(() => uids.take(['/w/c'])).toThrow(/all 2 uids .* are held by runs that have not ended/);
    b.returned();
    expect(uids.take(['/w/c']).uid).toBe(b.uid);
  });
});

describe('claimBlock', () => {
  it('skips a block another claim holds (a socket name the kernel gives one holder), and frees it on release', async () => {
    const first = await claimBlock(7);
    const second = await claimBlock(7);
    expect(second.first).toBe(first.first + BLOCK_SIZE);
    for (const claim of [first, second]) {
      expect(claim.count).toBe(BLOCK_SIZE);
      expect(isRunIdentity({ uid: claim.first, gid: 65534 })).toBe(true);
      expect(isRunIdentity({ uid: claim.first + claim.count - 1, gid: 65534 })).toBe(true);
    }
    first.release();
    // Closing is asynchronous: the name is free once the kernel has let go of it.
    let again = await claimBlock(7);
    for (let tries = 0; again.first !== first.first && tries < 50; tries++) {
      again.release();
      await new Promise((resolve) => setTimeout(resolve, 20));
      again = await claimBlock(7);
    }
    expect(again.first).toBe(first.first);
    again.release();
    second.release();
  });
});
