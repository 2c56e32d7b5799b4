import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectImages, FIGURES_DIR, figureEnv, sniffImage } from '../../src/engine/index.js';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

describe('sniffImage', () => {
  it('knows the four formats by their bytes, and nothing else', () => {
    expect(sniffImage(PNG)).toBe('image/png');
    expect(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg');
    expect(sniffImage(Buffer.from('GIF89a\x01\x00', 'latin1'))).toBe('image/gif');
    expect(sniffImage(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'))).toBe('image/webp');
    expect(sniffImage(Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1'))).toBeUndefined();
    expect(sniffImage(Buffer.from('not a picture'))).toBeUndefined();
    expect(sniffImage(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('collectImages', () => {
  it('takes figures first (removing them), then image files, within size and count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codexec-images-unit-'));
    try {
      const figures = join(dir, FIGURES_DIR);
      expect(figureEnv(dir).CODEXEC_FIGURES_DIR).toBe(figures);
      mkdirSync(figures);
      // Numbered, not sorted as text: figure-10 comes after figure-9.
      writeFileSync(join(figures, 'figure-010.png'), Buffer.concat([PNG, Buffer.from('ten')]));
      writeFileSync(join(figures, 'figure-009.png'), Buffer.concat([PNG, Buffer.from('nine')]));
      writeFileSync(join(dir, 'a.png'), PNG);
      writeFileSync(join(dir, 'big.gif'), Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(100)]));
      writeFileSync(join(dir, 'jpeg.png'), Buffer.from([0xff, 0xd8, 0xff, 0xe0])); // bytes and name differ
      // No link is followed, not even one within the dir: paths resolve beneath it, with no symlinks.
      symlinkSync(join(dir, 'a.png'), join(dir, 'inside.png'));
      const got = await collectImages({
        workspace: dir,
        workingDir: dir,
        artifacts: ['a.png', 'big.gif', 'jpeg.png', 'inside.png', 'notes.txt'],
        maxBytes: 50,
      });
      expect(got.images).toEqual([
        { mime_type: 'image/png' },
        { mime_type: 'image/png' },
        { mime_type: 'image/png', path: 'a.png' },
      ]);
      expect(got.images.map((image) => image.data?.subarray(12).toString())).toEqual(['nine', 'ten', '']);
      expect(JSON.stringify(got.images)).not.toContain('data');
      expect(got.images_skipped).toEqual([{ path: 'big.gif', reason: 'too_large' }]);
      const again = await collectImages({ workspace: dir, workingDir: dir, artifacts: [], maxBytes: 50 });
      expect(again).toEqual({ images: [] }); // the figures were taken
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
