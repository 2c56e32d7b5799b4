import { beforeAll, describe, expect, it } from 'vitest';
import {
  decodeAnsiC,
  innerShellCode,
  loadShellParser,
  MAX_PARSE_CHARS,
  parseShell,
  programArgv,
} from '../../src/policy/shell/index.js';

beforeAll(() => loadShellParser());

const programs = (line: string) => {
  const parsed = parseShell(line);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.commands.map((c) => c.program);
};

describe('parseShell: every simple command of a line', () => {
  it.each([
    ['ls; id', ['ls', 'id']],
    ['ls && id || whoami\npwd', ['ls', 'id', 'whoami', 'pwd']],
    ['ls | id &', ['ls', 'id']],
    ['echo "$(id)"', ['echo $(id)', 'id']],
    ['echo `id`', ['echo `id`', 'id']],
    ['(id)', ['id']],
    ['{ id; }', ['id']],
    ['if a; then b; else c; fi', ['a', 'b', 'c']],
    ['while a; do b; done; for x in 1; do c; done', ['a', 'b', 'c']],
    ['for ((i=0; i<3; i++)); do c; done', ['c']],
    ['PATH=/tmp; A=1 B=2', ['', '']],
    ['case x in y) id;; esac', ['id']],
    ['diff <(id) >(cat)', ['diff <(id) >(cat)', 'id', 'cat']],
    ['f() { id; }', ['id']],
    ['export A=$(id)', ['export A=$(id)', 'id']],
    ['cat <<EOF\n$(id)\nEOF', ['cat << EOF', 'id']],
    ['time id', ['id']],
    ['! id', ['id']],
    ['[[ -n $(id) ]]', ['id']],
    ['# only a comment', []],
  ])('%j → %j', (line, expected) => {
    expect(programs(line)).toEqual(expected);
  });

  it('keeps the command as written, as bash reads it, and as the program that runs', () => {
    const parsed = parseShell(`FOO=1 env "/bin/r"m -rf "$HOME" > 'out file'`);
    expect(parsed).toEqual({
      ok: true,
      commands: [
        {
          raw: `FOO=1 env "/bin/r"m -rf "$HOME" > 'out file'`,
          words: 'FOO=1 env /bin/rm -rf $HOME > out file',
          program: 'rm -rf $HOME > out file',
          argv: ['rm', '-rf', '$HOME'],
        },
      ],
    });
  });

  it('keeps text after multi-byte characters whole', () => {
    expect(parseShell('echo "é🙂"; ls -l "🙂"x')).toMatchObject({
      ok: true,
      commands: [
        { raw: 'echo "é🙂"', words: 'echo é🙂' },
        { raw: 'ls -l "🙂"x', words: 'ls -l 🙂x' },
      ],
    });
  });

  it('fails on what bash cannot parse, and on a line longer than the parser reads', () => {
    for (const line of ['echo "unclosed', 'ls &&', 'echo $(', 'if true; then']) {
      expect(parseShell(line), line).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/bash cannot parse it/),
      });
    }
    expect(parseShell(`echo ${'x'.repeat(MAX_PARSE_CHARS)}`)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/longer/),
    });
  });
});

describe('the normaliser: quotes, escapes, wrappers and paths', () => {
  it.each([
    ['r""m -rf /', 'rm -rf /'],
    ["$'\\x72\\x6d' -rf /", 'rm -rf /'],
    ["$'\\162\\155' x", 'rm x'],
    ["$'\\u0072m' x", 'rm x'],
    ['\\rm -rf /', 'rm -rf /'],
    ['"\\rm" x', '\\rm x'],
    ['"a\\"b"', 'a"b'],
    ["s''udo id", 'sudo id'],
    ['command sudo id', 'sudo id'],
    ['command -p env -u X A=1 exec -a n nohup nice -n 5 builtin /bin/rm x', 'rm x'],
    ['env -- rm x', 'rm x'],
    ['/bin/rm -rf /', 'rm -rf /'],
    ['../x/rm y', 'rm y'],
    ['echo "sudo"', 'echo sudo'],
    ['rm -rf ./build', 'rm -rf ./build'],
  ])('%s → %s', (line, program) => {
    expect(programs(line)).toEqual([program]);
  });

  it('programArgv stops at the first word that is not a wrapper option', () => {
    expect(programArgv(['env', 'A=1', 'B=2', 'ls', '-l', 'X=3'])).toEqual(['ls', '-l', 'X=3']);
    expect(programArgv(['nohup'])).toEqual([]);
    expect(programArgv(['command', '-v', 'rm'])).toEqual(['rm']);
  });

  it('finds the code a line hands to a shell: bash -c, sh -ec, eval', () => {
    expect(innerShellCode(['bash', '-c', 'rm -rf /', 'name'])).toBe('rm -rf /');
    expect(innerShellCode(['sh', '-ec', 'id'])).toBe('id');
    expect(innerShellCode(['eval', 'sudo', 'id'])).toBe('sudo id');
    expect(innerShellCode(['bash', 'script.sh'])).toBeUndefined();
    expect(innerShellCode(['python', '-c', 'x'])).toBeUndefined();
  });

  it('decodes ANSI-C quoting as bash does', () => {
    expect(decodeAnsiC('\\x72\\x6d\\t\\n\\e\\cA\\\\\\q')).toBe('rm\t\n\x1b\x01\\\\q');
  });
});
