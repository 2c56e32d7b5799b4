// Pictures in tool results: the MCP image content blocks made from a result's `images` (the bytes
// travel with each entry, never in the JSON: engine/images.ts; the fields are in results/).
import type { ContentBlock } from '@modelcontextprotocol/server';
import type { ResultImage } from '../engine/index.js';

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
