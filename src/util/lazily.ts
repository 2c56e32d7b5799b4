/**
 * `make()`'s value, made on the first call and kept. For what an idle server need not hold but a
 * busy one reads again and again: a zod schema costs ~1.2 KB of heap for each of its parts, and
 * the messages only some servers read (code mode's channel, sessions, the library) have hundreds
 * of them. What is read once, at start (a configuration file), is made for that read and let go.
 */
export function lazily<T>(make: () => T): () => T {
  let made: { readonly value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}
