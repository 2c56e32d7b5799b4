// SessionQuota alone: CODEXEC_MAX_SESSIONS per principal, CODEXEC_MAX_SESSIONS_TOTAL for all;
// a count is held from the start's request to the session's end, and a failed start gives it back.
import { describe, expect, it } from 'vitest';
import { SessionQuota } from '../../src/sessions/quota.js';

describe('SessionQuota', () => {
  it('counts each principal apart, and all of them against the total', () => {
    const quota = new SessionQuota(2, 3);
    const a1 = quota.take('alice');
    quota.bind(a1, 'sess_a1');
    quota.bind(quota.take('alice'), 'sess_a2');
    expect(() => quota.take('alice')).toThrow(/CODEXEC_MAX_SESSIONS=2/);
    quota.bind(quota.take('bob'), 'sess_b1');
    expect(() => quota.take('bob')).toThrow(/CODEXEC_MAX_SESSIONS_TOTAL=3/);
    quota.end('sess_a1');
    quota.end('sess_a1'); // once only
    quota.bind(quota.take('bob'), 'sess_b2');
    expect(() => quota.take('carol')).toThrow(/CODEXEC_MAX_SESSIONS_TOTAL/);
  });

  it('gives back the count of a start that failed, and only that one', () => {
    const quota = new SessionQuota(1, 10);
    const failed = quota.take('alice');
    quota.settle(failed);
    const started = quota.take('alice');
    quota.bind(started, 'sess_1');
    quota.settle(started); // bound: still counted until the session ends
    expect(() => quota.take('alice')).toThrow(/LIMIT|CODEXEC_MAX_SESSIONS/);
    quota.end('sess_1');
    expect(() => quota.take('alice')).not.toThrow();
  });
});
