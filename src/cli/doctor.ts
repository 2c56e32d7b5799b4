import { type InterpreterKind, Interpreters } from '../runtimes/index.js';
import { BackendRegistry } from '../sandbox/index.js';
import { configOrExit } from './config.js';

/** Report what works on this machine. Always exits 0: missing layers are information. */
export async function doctorCommand(): Promise<void> {
  const config = configOrExit();
  const interpreters = new Interpreters(config.interpreters);
  console.log(`codexec doctor`);
  console.log(`  configured sandbox mode: ${config.sandboxMode}`);
  try {
    const backend = await new BackendRegistry(config.sandboxMode).get();
    console.log(`  mode in use:             ${backend.mode}`);
  } catch (error) {
    console.log(`  mode in use:             none (${(error as Error).message})`);
  }
  for (const kind of ['python', 'node', 'bash'] as InterpreterKind[]) {
    try {
      console.log(`  ${kind.padEnd(7)} OK       ${await interpreters.get(kind)}`);
    } catch (error) {
      console.log(`  ${kind.padEnd(7)} missing  ${(error as Error).message}`);
    }
  }
}
