/**
 * What `promise` resolves to if it settles within `ms`, else undefined (the timer is cleared
 * either way). A plain timer: an aborted timers/promises sleep costs a DOMException with its
 * stack, on every run's path.
 */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
