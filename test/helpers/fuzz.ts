// Seeded generators of hostile input: raw frames for the stdio framing, and argument values for
// tools. Everything comes from one PRNG so a seed replays a run exactly.

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Fuzz {
  constructor(readonly random: () => number) {}

  int(max: number): number {
    return Math.floor(this.random() * max);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  /** Text with the awkward parts of Unicode: NUL, controls, lone surrogates, astral, RTL. */
  text(max = 40): string {
    const pieces = [
      'a',
      'Z',
      '0',
      ' ',
      '"',
      '\\',
      '\n',
      '\r',
      '\t',
      '\u0000',
      '\u0007',
      '\u001b[2J',
      '\ud800',
      '\udfff',
      '😀',
      '\u202e',
      'é',
      '中',
      '\uffff',
      '\ufeff',
      '${x}',
      '$(id)',
      '`',
      "'",
      '%s',
      '../',
      '*',
    ];
    let out = '';
    for (let i = this.int(max); i > 0; i--) out += this.pick(pieces);
    return out;
  }

  /** Any JSON-able value, nested up to `depth`. */
  value(depth = 3): unknown {
    switch (this.int(depth > 0 ? 11 : 8)) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER + 2]);
      case 3:
        return this.text();
      case 4:
        return '';
      case 5:
        return this.pick(['python', 'node', 'typescript', 'bash', 'ruby', 'PYTHON']);
      case 6:
        return this.pick(['sess_000000000000', 'exec_000000000000', 'x'.repeat(300), '../../etc/passwd']);
      case 7:
        return this.int(100_000);
      case 8:
        return Array.from({ length: this.int(4) }, () => this.value(depth - 1));
      case 9: {
        const obj: Record<string, unknown> = {};
        for (let i = this.int(4); i > 0; i--)
          obj[this.pick(['a', '__proto__', 'constructor', this.text(8)])] = this.value(depth - 1);
        return obj;
      }
      default:
        return nested(this.int(500) + 1);
    }
  }

  /** Random bytes, biased to the ones framing and decoding trip on. */
  bytes(max = 200): Buffer {
    const special = [
      0x00, 0x0a, 0x0d, 0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0xff, 0xfe, 0xc0, 0xed, 0xa0, 0x80,
    ];
    return Buffer.from(
      Array.from({ length: this.int(max) + 1 }, () =>
        this.chance(0.4) ? this.pick(special) : this.int(256),
      ),
    );
  }
}

/** `[[[…]]]` nested `depth` deep, built without recursion. */
export function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i++) value = [value];
  return value;
}
