/**
 * Tool results (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result):
 * text for the model, and `structuredContent` for programs. A failure is a
 * tool error — `isError: true`, not a JSON-RPC error — because the spec
 * keeps protocol errors for malformed requests and wants errors the model
 * can see and act on ("Tool Execution Errors") in the result.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export function ok(text: string | string[], structured?: Record<string, unknown>): CallToolResult {
  const texts = Array.isArray(text) ? text : [text];
  return { content: texts.map((t) => ({ type: 'text' as const, text: t })), ...(structured && { structuredContent: structured }) };
}

export function toolError(text: string, structured: Record<string, unknown> = {}): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { ...structured, error: structured.error ?? 'invalid-argument', message: text } };
}
