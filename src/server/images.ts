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
        mime_type: z.string(),
        path: z.string().optional().describe('relative to working_dir; absent for a figure'),
      }),
    )
    .describe('matplotlib figures, then image files written; each also an image content block, in order'),
  images_skipped: z
    .array(
      z.object({
        path: z.string().optional(),
        reason: z.enum(['too_large', 'too_many']).describe('over the byte limit, or past the 4th image'),
      }),
    )
    .optional()
    .describe('pictures left out'),
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
