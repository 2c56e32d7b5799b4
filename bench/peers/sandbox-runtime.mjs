// Peer row: Anthropic's sandbox-runtime used as a library, as a tool embedding it would: wrap the
// same command, spawn it through a shell, wait. Undefined when not installed (npm run bench:peers)
// or when it cannot start here (it needs bubblewrap, socat and ripgrep on Linux).
import { spawn } from 'node:child_process';

export async function sandboxRuntime() {
  let SandboxManager;
  try {
    ({ SandboxManager } = await import('./node_modules/@anthropic-ai/sandbox-runtime/dist/index.js'));
    await SandboxManager.initialize({
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { denyRead: [], allowWrite: ['/tmp'], denyWrite: [] },
    });
  } catch (error) {
    console.error(`  sandbox-runtime: not measured (${error.message.split('\n')[0]})`);
    return undefined;
  }
  const quote = (arg) => `'${arg.replaceAll("'", `'\\''`)}'`;
  return {
    async run(argv) {
      const command = await SandboxManager.wrapWithSandbox(argv.map(quote).join(' '));
      await new Promise((resolve, reject) => {
        const child = spawn(command, { shell: '/bin/sh', stdio: ['ignore', 'ignore', 'inherit'] });
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`sandbox-runtime exited ${code}`)),
        );
      });
    },
    reset: () => SandboxManager.reset(),
  };
}
