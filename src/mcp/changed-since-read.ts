/**
 * "Changed since you read" (docs/design.md §12): the files an agent read whole
 * that someone else has changed since, carried in the next answer of any tool
 * — the reminder Claude Code's own Read tool and TENEX give, delivered inside
 * the result because no client passes resource-update notifications to its
 * model. The same entries appear in `structuredContent.changed_since_read`
 * (what Claude Code, VS Code, Codex show a model on success) and as text
 * (what clients that prefer `content`, and every client on an error, show).
 *
 * One shape, declared here once: every tool's outputSchema includes it.
 */
import { z } from 'zod';

export const CHANGED_SINCE_READ = 'changed_since_read';

export const changedSinceReadEntry = z.object({
  path: z.string().describe('bucket/key of a file you read whole that someone else has changed since'),
  etag: z.string().describe('its ETag now: pass it as expected_etag only after reading the new version'),
  changed_by: z.string().describe('who wrote it: an agent name, or an access key'),
  changed_at: z.string().describe('when it was written, ISO 8601'),
  diff: z.string().describe('unified diff from the version you read to the current one, possibly cut short'),
  diff_truncated: z.boolean().describe('true when the diff was cut short: call `next` for all of it'),
  next: z.string().describe('the call that shows the rest, or refreshes your copy'),
});

export type ChangedSinceReadEntry = z.infer<typeof changedSinceReadEntry>;

/** The optional property every tool's outputSchema carries. */
export const changedSinceReadShape = { [CHANGED_SINCE_READ]: z.array(changedSinceReadEntry).optional().describe('files you read that changed since: read them again before relying on your copy') };
