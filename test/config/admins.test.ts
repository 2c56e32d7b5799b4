// CODEXEC_HTTP_ADMINS: the principals whose dashboard sees every principal's runs and sessions;
// CODEXEC_HTTP_APPROVERS: who decides approvals in the dashboard (the admins unless set).
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { tempDir } from '../helpers/server.js';

describe('CODEXEC_HTTP_ADMINS', () => {
  const homes: string[] = [];
  const load = (env: Record<string, string>) => {
    const home = tempDir();
    homes.push(home);
    return loadConfig({ CODEXEC_HOME: home, ...env });
  };
  afterEach(() => {
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  });

  it('is a comma list of principal names, none by default', () => {
    expect(load({}).http.admins).toEqual([]);
    expect(load({ CODEXEC_HTTP_ADMINS: ' carol, ops.team ,' }).http.admins).toEqual(['carol', 'ops.team']);
  });

  it('refuses a name no token file could hold, naming the setting', () => {
    expect(() => load({ CODEXEC_HTTP_ADMINS: 'carol,bad name' })).toThrow(/CODEXEC_HTTP_ADMINS/);
  });

  it('CODEXEC_HTTP_APPROVERS: the admins by default, its own list when set (even empty)', () => {
    expect(load({}).http.approvers).toEqual([]);
    expect(load({ CODEXEC_HTTP_ADMINS: 'carol' }).http.approvers).toEqual(['carol']);
    const set = { CODEXEC_HTTP_ADMINS: 'carol', CODEXEC_HTTP_APPROVERS: 'dave, erin' };
    expect(load(set).http).toMatchObject({ admins: ['carol'], approvers: ['dave', 'erin'] });
    expect(load({ CODEXEC_HTTP_ADMINS: 'carol', CODEXEC_HTTP_APPROVERS: '[]' }).http.approvers).toEqual([]);
    expect(() => load({ CODEXEC_HTTP_APPROVERS: 'dave,bad name' })).toThrow(/CODEXEC_HTTP_APPROVERS/);
  });
});
