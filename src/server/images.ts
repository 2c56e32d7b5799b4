// Pictures in tool results: the `images` fields of the output schemas, and the MCP image content
// blocks made from them (the bytes travel with each entry, never in the JSON: engine/images.ts).
import type { ContentBlock } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ResultImage } from '../engine/index.js';

/** Output fields of every tool whose result may carry pictures. */
export const imageFields = {
  images: z
    .array(
      z.object({
        mime_type: z.string().describe('image/png, image/jpeg, image/gif or image/webp'),
        path: z.string().optional().describe('the image file, relative to working_dir; absent for a figure'),
      }),
    )
    .describe(
      'matplotlib figures (shown, or open at the end), then image files the code wrote; each is also an ' +
        'image content block after the JSON, in this order',
    ),
  images_skipped: z
    .array(
      z.object({
        path: z.string().optional().describe('absent for a figure'),
        reason: z
          .enum(['too_large', 'too_many'])
          .describe('over CODEXEC_MAX_IMAGE_BYTES, or past the 4 images a result carries'),
      }),
    )
    .optional()
    .describe('present when pictures were left out'),
};

/** The image content blocks of a result: one per entry of `images` that holds its bytes. */
export function imageContent(value: {
  readonly images?: readonly ResultImage[] | undefined;
}): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  for (const image of value.images ?? []) {
    if (image.data)
      blocks.push({ type: 'image', data: image.data.toString('base64'), mimeType: image.mime_type });
  }
  return blocks;
}
