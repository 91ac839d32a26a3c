/**
 * read_media_file {path}: an image, audio or other binary file, base64, with
 * its MIME type and ETag — as the reference server's tool answers (image and
 * audio content), other types as an embedded resource. A full read stamp
 * (docs/design.md §4): the model was given every byte.
 *
 * No structuredContent and no outputSchema, on purpose: Claude Code, Codex
 * and opencode hand the model only JSON.stringify(structuredContent) when a
 * result carries it, and then drop the image (anthropics/claude-code#54737;
 * opencode PR 32868 declined for that reason), while every client passes
 * `content` — image and text — when there is none. So the path, MIME type,
 * size and etag travel in a text part beside the image (docs/design.md §12).
 */
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFile, showPath } from '../paths.js';
import { guarded, refused, type RegisterTool } from '../tool.js';

const BY_EXTENSION: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml', bmp: 'image/bmp',
  mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', flac: 'audio/flac', pdf: 'application/pdf',
};

function mimeOf(key: string, contentType: string | undefined): string {
  if (contentType && contentType !== 'binary/octet-stream' && contentType !== 'application/octet-stream') return contentType.split(';')[0]!.trim();
  return BY_EXTENSION[key.slice(key.lastIndexOf('.') + 1).toLowerCase()] ?? 'application/octet-stream';
}

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'read_media_file',
    {
      title: 'Read an image or other binary file',
      description: 'Read an image, audio file, PDF or other binary file from casket, as base64 with its MIME type. The answer names the file\'s etag (for a later write or delete).',
      inputSchema: { path: z.string().describe('bucket/key or s3://bucket/key') },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ path }, extra) =>
      guarded(shared, extra, async (env): Promise<CallToolResult> => {
        const p = requireFile(path);
        const res = await env.door.s3(env.caller, { method: 'GET', bucket: p.bucket, key: p.key }, { maxBytes: env.maxTextBytes, stamp: 'full' });
        if (res.failure) return refused(env, 'read_media_file', p, res.failure);
        const mimeType = mimeOf(p.key, res.headers['content-type']);
        const data = res.body!.toString('base64');
        const etag = res.headers.etag!;
        const note = { type: 'text' as const, text: `[${showPath(p)}: ${mimeType}, ${res.body!.length} bytes, etag ${etag}, a full read: pass the etag as expected_etag to replace or delete it]` };
        const media = mimeType.startsWith('image/')
          ? { type: 'image' as const, data, mimeType }
          : mimeType.startsWith('audio/')
            ? { type: 'audio' as const, data, mimeType }
            : { type: 'resource' as const, resource: { uri: `s3://${showPath(p)}`, mimeType, blob: data } };
        return { content: [media, note] };
      }),
  );
};
