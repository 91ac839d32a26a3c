/**
 * What a model sees of a tool result (docs/design.md §12). A client, not the
 * protocol, decides what of a CallToolResult reaches its model, and the
 * clients agents run decide differently; one function per rule:
 *
 * - structuredOnly: Claude Code (2.0.21 on; claude-code issues 9962, 79944),
 *   VS Code (vscode 290063), Copilot CLI, opencode (PR 32074) and Codex hand a
 *   model only JSON.stringify(structuredContent) when a successful result
 *   carries it, and drop `content` — images included (claude-code 54737);
 *   without structuredContent they pass `content`.
 * - textOnlyOnError: Claude Code hands the model only the text of an error
 *   result (isError) and drops structuredContent (claude-code 86032).
 * - contentFirst: Kimi Code (PR 3234) and others pass `content`, and
 *   structuredContent only when content holds nothing.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface ModelView {
  /** The text the model reads. */
  text: string;
  /** The MIME types of the image, audio and embedded resource parts it is shown. */
  media: string[];
}

function contentView(r: CallToolResult): ModelView {
  const text: string[] = [];
  const media: string[] = [];
  for (const c of r.content) {
    if (c.type === 'text') text.push(c.text);
    else if (c.type === 'image' || c.type === 'audio') media.push(c.mimeType);
    else if (c.type === 'resource') media.push(c.resource.mimeType ?? 'application/octet-stream');
  }
  return { text: text.join('\n'), media };
}

const json = (r: CallToolResult): ModelView => ({ text: JSON.stringify(r.structuredContent), media: [] });

export function structuredOnly(r: CallToolResult): ModelView {
  return r.structuredContent != null ? json(r) : contentView(r);
}

export function textOnlyOnError(r: CallToolResult): ModelView {
  return { text: contentView(r).text, media: [] };
}

export function contentFirst(r: CallToolResult): ModelView {
  const v = contentView(r);
  return v.text.trim() === '' && v.media.length === 0 && r.structuredContent != null ? json(r) : v;
}

/** The views a model may get of `r`: text-only is Claude Code's rule for errors, not for successes. */
export function viewsOf(r: CallToolResult): Record<string, ModelView> {
  return r.isError ? { structuredOnly: structuredOnly(r), textOnlyOnError: textOnlyOnError(r), contentFirst: contentFirst(r) } : { structuredOnly: structuredOnly(r), contentFirst: contentFirst(r) };
}

/** One thing the model needs: a string it must read, or several forms of which it must read one. */
export type Need = string | readonly string[];

/** Whether the view's text shows `s`, verbatim or as JSON.stringify escapes it (a model reads both). */
function shows(view: ModelView, s: string): boolean {
  return view.text.includes(s) || view.text.includes(JSON.stringify(s).slice(1, -1));
}

/** The needs each view of `r` lacks, as "view: need" lines; [] when every view holds all of them. */
export function missing(r: CallToolResult, needs: readonly Need[], media: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const [name, view] of Object.entries(viewsOf(r))) {
    for (const need of needs) {
      const forms = typeof need === 'string' ? [need] : need;
      if (!forms.some((f) => shows(view, f))) out.push(`${name}: ${forms.join(' | ')}`);
    }
    for (const m of media) if (!view.media.includes(m)) out.push(`${name}: ${m} part`);
  }
  return out;
}

/** The views of `r` whose text shows `s` (as `missing` reads them); [] when no view a model may get shows it. */
export function showing(r: CallToolResult, s: string): string[] {
  return Object.entries(viewsOf(r)).filter(([, view]) => shows(view, s)).map(([name]) => name);
}
