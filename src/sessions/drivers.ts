import { type InterpreterKind, type Language, RUNTIMES } from '../runtimes/index.js';
import { packagePath } from '../util/index.js';

/** How to start the long-lived driver of one language. */
export interface DriverSpec {
  readonly interpreter: InterpreterKind;
  /** Absolute path of the driver source; the sandbox must be able to read it. */
  readonly file: string;
  argv(interpreter: string): string[];
  readonly env: Readonly<Record<string, string>>;
}

// From dist/sessions/ (and src/sessions/ under test) the drivers sit two levels up.
const driverPath = (name: string) => packagePath('drivers', name);

const python: DriverSpec = {
  interpreter: 'python',
  file: driverPath('python_driver.py'),
  argv(interpreter) {
    return [interpreter, this.file];
  },
  env: RUNTIMES.python.env,
};

const node: DriverSpec = {
  interpreter: 'node',
  file: driverPath('node_driver.mjs'),
  argv(interpreter) {
    // --expose-internals: the driver reuses Node's REPL transform for top-level await.
    // --experimental-vm-modules: a cell's own import() is answered by the driver, which also
    // searches the session's installs (Node refuses such a callback without it).
    return [
      interpreter,
      '--expose-internals',
      '--experimental-vm-modules',
      '--disable-warning=ExperimentalWarning',
      this.file,
    ];
  },
  env: {},
};

const bash: DriverSpec = {
  interpreter: 'bash',
  file: driverPath('bash_driver.sh'),
  argv(interpreter) {
    return [interpreter, '--norc', '--noprofile', this.file];
  },
  env: {},
};

export const DRIVERS: Readonly<Record<Language, DriverSpec>> = { python, node, typescript: node, bash };
