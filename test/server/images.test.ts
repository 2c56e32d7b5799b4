// Pictures come back as MCP image content: matplotlib figures (shown or left open), image files a
// run writes, within CODEXEC_MAX_IMAGE_BYTES and 4 per result. matplotlib is Debian's
// (python3-matplotlib, .ci/run installs it), importable by /usr/bin/python3 only.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { ERAS, startServer, type TestServer, textFacts } from '../helpers/server.js';

interface Value {
  success: boolean;
  stderr: string;
  artifacts: string[];
  working_dir: string;
  warm?: boolean;
  session_id?: string;
  images: Array<{ mime_type: string; path?: string }>;
  images_skipped?: Array<{ path?: string; reason: string }>;
}
interface Picture {
  mimeType: string;
  bytes: Buffer;
}

const PYTHON = { CODEXEC_PYTHON: '/usr/bin/python3' };
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Width and height from a PNG's IHDR chunk, after checking the signature. */
function pngSize(bytes: Buffer): [number, number] {
  expect(bytes.subarray(0, 8).equals(PNG_MAGIC)).toBe(true);
  expect(bytes.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
}

async function call(server: TestServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: args });
  const content = result.content as Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
  expect(content[0]?.type).toBe('text');
  const value = result.structuredContent as unknown as Value;
  // The text's facts are the structured value's: no image bytes in them.
  const facts = textFacts(content[0]?.text ?? '', value);
  expect(JSON.stringify(facts)).not.toMatch(/iVBORw0KGgo/);
  // Then the pictures, then a resource link per file (test/server/resources.test.ts).
  const rest = content.slice(1);
  const firstLink = rest.findIndex((block) => block.type === 'resource_link');
  const images = firstLink === -1 ? rest : rest.slice(0, firstLink);
  expect(rest.slice(images.length).every((block) => block.type === 'resource_link')).toBe(true);
  const pictures: Picture[] = images.map((block) => {
    expect(block.type).toBe('image');
    return { mimeType: block.mimeType ?? '', bytes: Buffer.from(block.data ?? '', 'base64') };
  });
  expect(result.isError ?? false, JSON.stringify(value)).toBe(false);
  // One content block per `images` entry, in order.
  expect(pictures.map((p) => p.mimeType)).toEqual(value.images.map((i) => i.mime_type));
  return { value, pictures };
}

describe.each(ERAS)('images (%s era)', (era) => {
  let server: TestServer;
  const run = (code: string, extra: Record<string, unknown> = {}) =>
    call(server, 'execute_code', { language: 'python', code, ...extra });

  // The host directory a cold run works in, the one root the server allows.
  const dir = ownedDir('codexec-images-');

  beforeAll(async () => {
    server = await startServer({ era, env: { ...PYTHON, ...allowing(dir) } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns a figure shown with plt.show() as one PNG image, without a backend set by the code', async () => {
    const { value, pictures } = await run(
      'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.show()\nprint(plt.get_backend())',
    );
    expect(value.success, value.stderr).toBe(true);
    expect(value.images).toEqual([{ mime_type: 'image/png' }]);
    expect(pictures).toHaveLength(1);
    expect(pngSize(pictures[0]?.bytes ?? Buffer.alloc(0))).toEqual([640, 480]);
    expect(pictures[0]?.bytes.length).toBeGreaterThan(5000); // a drawn plot, not an empty canvas
    // Neither the figures nor matplotlib's config/cache are artifacts.
    expect(value.artifacts).toEqual([]);
    expect(value.stderr).toBe('');
    // The hidden folder goes with the workspace: nothing was left for the agent.
    await expect.poll(() => existsSync(value.working_dir), { timeout: 5000 }).toBe(false);
  });

  it('returns a figure left open at the end of a run', async () => {
    const { value, pictures } = await run('import matplotlib.pyplot as plt\nplt.bar([1, 2], [3, 5])');
    expect(value.success, value.stderr).toBe(true);
    expect(pictures.map((p) => pngSize(p.bytes))).toEqual([[640, 480]]);
  });

  it('returns two figures in the order they were made', async () => {
    const { pictures } = await run(
      'import matplotlib.pyplot as plt\n' +
        'plt.figure(figsize=(2, 2), dpi=100); plt.plot([1, 2])\n' +
        'plt.figure(figsize=(4, 2), dpi=100); plt.plot([2, 1])\n' +
        'plt.show()',
    );
    expect(pictures.map((p) => pngSize(p.bytes))).toEqual([
      [200, 200],
      [400, 200],
    ]);
  });

  it('returns no image for code that draws nothing', async () => {
    const { value, pictures } = await run('print(1)');
    expect(value.images).toEqual([]);
    expect(pictures).toEqual([]);
  });

  it('returns figures from a cold run in a working_dir, leaving nothing of matplotlib there', async () => {
    const { value, pictures } = await run(
      'import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 1), dpi=100)\nplt.plot([1, 2])',
      { working_dir: dir },
    );
    expect(value).toMatchObject({ success: true, warm: false, working_dir: dir, artifacts: [] });
    expect(pictures.map((p) => pngSize(p.bytes))).toEqual([[300, 100]]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('returns image files the code wrote, by content: a .png of text is no image', async () => {
    const { value, pictures } = await run(
      'from PIL import Image\n' +
        'Image.new("RGB", (7, 5), "red").save("a.jpg")\n' +
        'Image.new("RGB", (3, 2), "blue").save("b.gif")\n' +
        'Image.new("RGB", (4, 4), "green").save("c.png")\n' +
        'Image.new("RGB", (6, 6), "white").save("d.webp")\n' +
        'open("fake.png", "w").write("not a picture")\n',
    );
    expect(value.success, value.stderr).toBe(true);
    expect(value.artifacts.sort()).toEqual(['a.jpg', 'b.gif', 'c.png', 'd.webp', 'fake.png']);
    expect(value.images).toEqual([
      { mime_type: 'image/jpeg', path: 'a.jpg' },
      { mime_type: 'image/gif', path: 'b.gif' },
      { mime_type: 'image/png', path: 'c.png' },
      { mime_type: 'image/webp', path: 'd.webp' },
    ]);
    expect(value.images_skipped).toBeUndefined();
    expect(pictures[0]?.bytes.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(pictures[1]?.bytes.subarray(0, 6).toString('latin1')).toBe('GIF87a');
    expect(pngSize(pictures[2]?.bytes ?? Buffer.alloc(0))).toEqual([4, 4]);
    expect(pictures[3]?.bytes.subarray(8, 12).toString('latin1')).toBe('WEBP');
  });

  it('returns figures first and at most 4 images, naming the rest', async () => {
    const { value, pictures } = await run(
      'import matplotlib.pyplot as plt\nfrom PIL import Image\nplt.plot([1, 2])\n' +
        'for i in range(5):\n    Image.new("RGB", (2, 2)).save(f"p{i}.png")\n',
    );
    expect(value.images).toEqual([
      { mime_type: 'image/png' },
      { mime_type: 'image/png', path: 'p0.png' },
      { mime_type: 'image/png', path: 'p1.png' },
      { mime_type: 'image/png', path: 'p2.png' },
    ]);
    expect(pictures).toHaveLength(4);
    expect(pngSize(pictures[0]?.bytes ?? Buffer.alloc(0))).toEqual([640, 480]);
    expect(value.images_skipped).toEqual([
      { path: 'p3.png', reason: 'too_many' },
      { path: 'p4.png', reason: 'too_many' },
    ]);
  });

  it('skips an image over CODEXEC_MAX_IMAGE_BYTES (default 2 MiB)', async () => {
    const { value, pictures } = await run(
      'from PIL import Image\nimport os\n' +
        'Image.new("RGB", (2, 2)).save("small.png")\n' +
        'open("big.png", "wb").write(open("small.png", "rb").read() + os.urandom(2 * 1024 * 1024))\n',
    );
    expect(value.images).toEqual([{ mime_type: 'image/png', path: 'small.png' }]);
    expect(pictures).toHaveLength(1);
    expect(value.images_skipped).toEqual([{ path: 'big.png', reason: 'too_large' }]);
  });

  it('does not follow a link the code made to a picture outside the working dir', async () => {
    // The server reads the files, not the sandbox: a link must not lend it the server's view.
    const secret = join(mkdtempSync(join(tmpdir(), 'codexec-secret-')), 'secret.png');
    writeFileSync(secret, Buffer.concat([PNG_MAGIC, Buffer.alloc(64)]));
    try {
      const { value, pictures } = await run(
        `import os\nos.symlink(${JSON.stringify(secret)}, "leak.png")\nos.mkdir("d")\nos.symlink("/", "d/root")`,
      );
      expect(value.artifacts).toContain('leak.png');
      expect(value.images).toEqual([]);
      expect(pictures).toEqual([]);
    } finally {
      rmSync(dirname(secret), { recursive: true, force: true });
    }
  });

  it('returns image files from other languages too (node)', async () => {
    const gif = 'R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs='; // a 1x1 GIF
    const { value, pictures } = await call(server, 'execute_code', {
      language: 'node',
      code: `require('fs').writeFileSync('dot.gif', Buffer.from('${gif}', 'base64'))`,
    });
    expect(value.images).toEqual([{ mime_type: 'image/gif', path: 'dot.gif' }]);
    expect(pictures[0]?.bytes.toString('base64')).toBe(gif);
  });

  it('returns each session send the figures it made, like a notebook', async () => {
    const started = await server.client.callTool({
      name: 'start_session',
      arguments: { language: 'python' },
    });
    const id = (started.structuredContent as { session_id: string }).session_id;
    const send = (code: string) => call(server, 'send_to_session', { session_id: id, code });
    try {
      const first = await send(
        'import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 1), dpi=100)\nplt.plot([1, 2])',
      );
      expect(first.value.success, first.value.stderr).toBe(true);
      expect(first.pictures.map((p) => pngSize(p.bytes))).toEqual([[200, 100]]);
      const second = await send('x = 41');
      expect(second.value.images).toEqual([]);
      expect(second.pictures).toEqual([]);
      const third = await send(
        'plt.figure(figsize=(1, 2), dpi=100)\nplt.plot([x, x + 1])\nplt.show()\nlen(plt.get_fignums())',
      );
      expect(third.pictures.map((p) => pngSize(p.bytes))).toEqual([[100, 200]]);
      expect(third.value).toMatchObject({ success: true, artifacts: [] });
      const fourth = await send('from PIL import Image\nImage.new("RGB", (5, 5)).save("cell.png")');
      expect(fourth.value.images).toEqual([{ mime_type: 'image/png', path: 'cell.png' }]);
    } finally {
      await server.client.callTool({ name: 'close_session', arguments: { session_id: id } });
    }
  });

  it('returns the figures of a saved script run with run_script', async () => {
    const saved = await server.client.callTool({
      name: 'save_script',
      arguments: {
        name: `plot-${era}`,
        description: 'draws a line',
        language: 'python',
        code: 'import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 3), dpi=100)\nplt.plot([1, 2])\nplt.show()',
      },
    });
    expect(saved.isError ?? false).toBe(false);
    const { value, pictures } = await call(server, 'run_script', { name: `plot-${era}` });
    expect(value.success, value.stderr).toBe(true);
    expect(pictures.map((p) => pngSize(p.bytes))).toEqual([[200, 300]]);
  });

  it('advertises images in the output schemas of execute_code, send_to_session and run_script', async () => {
    const { tools } = await server.client.listTools();
    for (const name of ['execute_code', 'send_to_session', 'run_script'])
      expect(tools.find((t) => t.name === name)?.outputSchema?.properties).toHaveProperty('images');
  });
});

describe('images in subprocess mode', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { ...PYTHON, CODEXEC_SANDBOX_MODE: 'subprocess' } });
  });
  afterAll(() => server.close());

  it('returns a shown figure and leaves no matplotlib files in the workspace', async () => {
    const { value, pictures } = await call(server, 'execute_code', {
      language: 'python',
      code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nplt.plot([3, 1])',
    });
    expect(value).toMatchObject({ success: true, artifacts: [] });
    expect(pictures.map((p) => pngSize(p.bytes))).toEqual([
      [640, 480],
      [640, 480],
    ]);
    await expect.poll(() => existsSync(value.working_dir), { timeout: 5000 }).toBe(false);
  });
});
