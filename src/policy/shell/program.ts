// Commands that run the rest of their arguments as a command: skipping them finds the program a
// rule cares about (`env FOO=1 nohup /bin/rm -rf /` runs `rm -rf /`). Data, like the rules: a
// wrapper's options, and which of them take a value.
interface Wrapper {
  /** Options followed by a separate value (`env -u NAME`). Other `-…` words are flags. */
  readonly withValue: readonly string[];
  /** NAME=value words before the program are settings, not the program (env). */
  readonly assignments?: boolean;
}

const WRAPPERS: Readonly<Record<string, Wrapper>> = {
  builtin: { withValue: [] },
  // `command -v x` only prints where x is; treating it as running x errs on the refusing side.
  command: { withValue: [] },
  // `env -S 'rm -rf /'` leaves one word, `rm -rf /`, which the space-joined line reads as the command.
  env: { withValue: ['-u', '--unset', '-C', '--chdir'], assignments: true },
  exec: { withValue: ['-a'] },
  nice: { withValue: ['-n', '--adjustment'] },
  nohup: { withValue: [] },
  // The keyword `time` is syntax the parser removes; this is /usr/bin/time or `command time`.
  time: { withValue: ['-f', '--format', '-o', '--output'] },
};

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The command a path names: `/bin/rm` and `./rm` both run a program called rm. */
export function commandName(word: string): string {
  return word.includes('/') ? word.slice(word.lastIndexOf('/') + 1) : word;
}

/**
 * The program that runs and its arguments, from a simple command's normalised words (assignments
 * already left out): wrapper commands and their options skipped, the program named by its basename.
 */
export function programArgv(argv: readonly string[]): string[] {
  let rest = [...argv];
  for (;;) {
    const wrapper = rest[0] === undefined ? undefined : WRAPPERS[commandName(rest[0])];
    if (!wrapper) break;
    let i = 1;
    while (i < rest.length) {
      const word = rest[i] as string;
      if (word === '--') {
        i += 1;
        break;
      }
      if (wrapper.assignments && ASSIGNMENT.test(word)) i += 1;
      else if (word.startsWith('-') && word !== '-') i += wrapper.withValue.includes(word) ? 2 : 1;
      else break;
    }
    rest = rest.slice(i);
  }
  if (rest[0] !== undefined) rest[0] = commandName(rest[0]);
  return rest;
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'ksh', 'zsh']);

/**
 * The shell code a program line hands to a shell, if it does: `bash -c CODE` (`-ec`, `-xc`, …)
 * and `eval WORDS…`. The rules read that code too (`bash -c 'r""m -rf /'`); the lists don't:
 * allowing `bash` allows what it runs.
 */
export function innerShellCode(argv: readonly string[]): string | undefined {
  const [name, ...rest] = argv;
  if (name === 'eval') return rest.join(' ');
  if (name === undefined || !SHELLS.has(name)) return undefined;
  const flag = rest.findIndex((word) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(word));
  return flag < 0 ? undefined : rest[flag + 1];
}
