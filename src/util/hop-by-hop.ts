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
