/**
 * Headers of one connection, not of the message (RFC 9110 §7.6.1, and the Proxy- ones): a proxy
 * never passes them on.
 */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Raw headers `raw` (name, value, name, value…) without hop-by-hop headers, those Connection names, nor `also`'s. */
export function endToEnd(raw: readonly string[], ...also: string[]): string[] {
  const listed = new Set(
    valuesOf(raw, 'connection').flatMap((value) => value.split(',').map((name) => name.trim().toLowerCase())),
  );
  for (const name of also) listed.add(name);
  const kept: string[] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (!HOP_BY_HOP.has(name) && !listed.has(name)) kept.push(raw[index] as string, raw[index + 1] as string);
  }
  return kept;
}

/** Every value of header `name` (lowercase) in raw headers. */
export function valuesOf(raw: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let index = 0; index + 1 < raw.length; index += 2)
    if ((raw[index] as string).toLowerCase() === name) values.push(raw[index + 1] as string);
  return values;
}
