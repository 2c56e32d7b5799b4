// The egress proxy's certificate authority (CODEXEC_CREDENTIALS): made once per CODEXEC_HOME, its
// key 0600 in the home, its certificate in the trust stores of sandboxes. The proxy presents a
// certificate it signs only for the credential hosts it intercepts (intercept.ts); every other
// HTTPS connection stays a blind tunnel. Certificates are made with node-forge (maintained, no
// dependencies of its own; Node's crypto reads certificates but cannot make them), loaded on the
// first use; keys are made by Node's crypto.
import { generateKeyPair, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SecureContext } from 'node:tls';
import { promisify } from 'node:util';

/** The system's bundle, which a sandbox's bundle starts with (Debian's; Red Hat's). */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'];
const CA_DAYS = 3650;
const LEAF_DAYS = 7;
/** Leaf contexts kept (one per credential host): a bound, the oldest going first. */
const MAX_LEAVES = 256;

/** The CA's own directory in the home (0700), and where sandboxes find its certificate. */
const OWN_DIR = 'egress-ca';
const TRUST_DIR = 'egress-trust';

const forge = async () => (await import('node-forge')).default;
const makeKeys = promisify(generateKeyPair);

/** Where the files sandboxes read lie: under where runs live, which their users can reach. */
export function caFiles(runs: string): { readonly bundle: string; readonly certificate: string } {
  const dir = join(runs, TRUST_DIR);
  return { bundle: join(dir, 'bundle.pem'), certificate: join(dir, 'ca.pem') };
}

export class EgressCa {
  readonly #leaves = new Map<string, Promise<SecureContext>>();
  #leafKey?: Promise<{ key: string; publicKey: string }>;

  private constructor(
    readonly certificate: string,
    private readonly key: string,
  ) {}

  /**
   * The CA of `home` (`egress-ca/ca-key.pem`, 0600: key and certificate; made now if missing),
   * with the files sandboxes read (caFiles(runs): `egress-trust/`) written: the CA's certificate,
   * and the system's roots with it.
   */
  static async open(home: string, runs: string): Promise<EgressCa> {
    const own = join(home, OWN_DIR);
    await mkdir(own, { recursive: true, mode: 0o700 });
    const file = join(own, 'ca-key.pem');
    if (!existsSync(file)) await makeCa(file);
    const text = (await readFile(file, 'utf8')).replaceAll('\r\n', '\n'); // forge writes CRLF
    const key = /-----BEGIN RSA PRIVATE KEY-----[\s\S]*?-----END RSA PRIVATE KEY-----\n/.exec(text)?.[0];
    const certificate = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/.exec(text)?.[0];
    if (!key || !certificate)
      throw new Error(`${file} holds no CA key and certificate: remove it to have a new CA made`);
    const ca = new EgressCa(certificate, key);
    const files = caFiles(runs);
    await mkdir(join(runs, TRUST_DIR), { recursive: true, mode: 0o755 });
    await chmod(join(runs, TRUST_DIR), 0o755);
    const system = SYSTEM_BUNDLES.find((path) => existsSync(path));
    const roots = system ? `${(await readFile(system, 'utf8')).trimEnd()}\n` : '';
    await writePublic(files.certificate, ca.certificate);
    await writePublic(files.bundle, `${roots}${ca.certificate}`);
    return ca;
  }

  /** A TLS context presenting a certificate for `host` (a name or an IP literal), signed by the CA. */
  contextFor(host: string): Promise<SecureContext> {
    let context = this.#leaves.get(host);
    if (!context) {
      if (this.#leaves.size >= MAX_LEAVES) this.#leaves.delete(this.#leaves.keys().next().value as string);
      context = this.#leaf(host);
      this.#leaves.set(host, context);
      context.catch(() => this.#leaves.delete(host));
    }
    return context;
  }

  async #leaf(host: string): Promise<SecureContext> {
    // One key for every leaf of this process: a host's certificate costs a signature, not a key.
    this.#leafKey ??= makeKeys('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    }).then(({ privateKey, publicKey }) => ({ key: privateKey, publicKey }));
    const [{ pki, md }, leafKey, { createSecureContext }] = await Promise.all([
      forge(),
      this.#leafKey,
      import('node:tls'),
    ]);
    const ca = pki.certificateFromPem(this.certificate);
    const cert = pki.createCertificate();
    cert.publicKey = pki.publicKeyFromPem(leafKey.publicKey);
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(Date.now() - 3_600_000);
    cert.validity.notAfter = new Date(Date.now() + LEAF_DAYS * 86_400_000);
    cert.setSubject([{ name: 'commonName', value: host }]);
    cert.setIssuer(ca.subject.attributes);
    const ip = /^[\d.]+$/.test(host) || host.includes(':');
    cert.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [ip ? { type: 7, ip: host } : { type: 2, value: host }] },
    ]);
    cert.sign(pki.privateKeyFromPem(this.key), md.sha256.create());
    return createSecureContext({
      key: leafKey.key,
      cert: `${pki.certificateToPem(cert)}${this.certificate}`,
    });
  }
}

/**
 * Make the CA into `file` (0600: its key, then its certificate), unless another server sharing
 * the home made one first: the file appears whole, once (a link, which never replaces).
 */
async function makeCa(file: string): Promise<void> {
  const { privateKey } = await makeKeys('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${privateKey}${await caCertificate(privateKey)}`, { mode: 0o600 });
  try {
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(temporary);
  }
}

async function caCertificate(keyPem: string): Promise<string> {
  const { pki, md } = await forge();
  const key = pki.privateKeyFromPem(keyPem);
  const cert = pki.createCertificate();
  cert.publicKey = pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(Date.now() - 3_600_000);
  cert.validity.notAfter = new Date(Date.now() + CA_DAYS * 86_400_000);
  const name = [
    { name: 'commonName', value: `codexec egress proxy ${randomBytes(4).toString('hex')}` },
    { name: 'organizationName', value: 'codexec' },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(key, md.sha256.create());
  return pki.certificateToPem(cert);
}

/** A positive serial number (its top bit clear), random. */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes.toString('hex');
}

/** Written to a temporary name, then renamed: a reader never sees half of it. */
async function writeWhole(path: string, text: string, mode: number): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode });
  await chmod(temporary, mode);
  await rename(temporary, path);
}

/** A file every sandbox user reads, rewritten only when it differs. */
async function writePublic(path: string, text: string): Promise<void> {
  const now = existsSync(path) ? await readFile(path, 'utf8') : undefined;
  if (now !== text) await writeWhole(path, text, 0o644);
}
