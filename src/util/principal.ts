import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';

// Who a request acts for (serve --http: the bearer token's principal; stdio: `local`). Set once
// around each tool call (define-tool.ts) and read where records are written (execution logs,
// audit entries), so no tool can forget to pass it down and no caller can pass a wrong one.

/** The principal of stdio, of the CLI, and of work no request started. */
export const LOCAL_PRINCIPAL = 'local';

const current = new AsyncLocalStorage<string>();

/** Run `task` on behalf of `principal`: everything it starts, awaits included, sees it. */
export function asPrincipal<T>(principal: string, task: () => T): T {
  return current.run(principal, task);
}

/** The principal of the request this code runs for; `local` outside any. */
export function currentPrincipal(): string {
  return current.getStore() ?? LOCAL_PRINCIPAL;
}

/**
 * A folder name for any principal name: its safe characters for whoever reads the disk, then a
 * hash of the whole name. Never a path: `..`, `/`, NUL, a name over 255 bytes all come out as one
 * plain component. The hash keeps names apart that differ only in case (case-insensitive disks)
 * or in the characters replaced, and a leading dot is impossible (it starts with a letter or `_`).
 */
export function principalFolder(principal: string): string {
  const readable = principal.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  const hash = createHash('sha256').update(principal, 'utf8').digest('hex').slice(0, 32);
  return `p_${readable}-${hash}`;
}
