import { AsyncLocalStorage } from 'node:async_hooks';

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
