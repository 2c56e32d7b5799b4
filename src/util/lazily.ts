/**
 * `make()`'s value, made on the first call and kept. For what an idle server need not hold: a
 * zod schema costs ~1.2 KB of heap for each of its parts, and the files only some servers read
 * (code mode's channel, sessions, the library, policy.json) have hundreds of them.
 */
export function lazily<T>(make: () => T): () => T {
  let made: { readonly value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}
