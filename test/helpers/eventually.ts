// Waiting in tests for what comes after a while (a container's removal, a batched write): poll.

/** Poll until `check` holds, at most `ms`. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return check();
}
