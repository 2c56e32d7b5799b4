import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { libraryDir, PRINCIPALS_FOLDER } from '../../src/library/index.js';
import { LOCAL_PRINCIPAL, principalFolder } from '../../src/util/index.js';

describe('a library folder per principal', () => {
  it('keeps the local principal in the scripts dir itself', () => {
    expect(libraryDir('/lib', LOCAL_PRINCIPAL)).toBe('/lib');
  });

  it.each([
    '..',
    '.',
    '',
    '/',
    '../../etc',
    'a/b',
    'a\0b',
    'x'.repeat(1000),
    'élan',
    '.principals',
    'local ',
  ])('puts %j in one plain folder beneath .principals', (principal) => {
    const folder = principalFolder(principal);
    expect(folder).toMatch(/^p_[A-Za-z0-9_-]{0,40}-[0-9a-f]{32}$/);
    expect(libraryDir('/lib', principal)).toBe(join('/lib', PRINCIPALS_FOLDER, folder));
  });

  it('keeps apart names that differ in case or only in replaced characters', () => {
    const names = ['alice', 'Alice', 'ALICE', 'a.b', 'a_b', 'a/b', 'a b'];
    const folders = names.map((name) => principalFolder(name).toLowerCase());
    expect(new Set(folders).size).toBe(names.length);
  });
});
