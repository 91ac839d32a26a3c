/**
 * What every tool handler is given: the door into casket, the caller the
 * endpoint authenticated, and the limits. One file per tool under tools/,
 * named after the tool verbatim, each with its zod schema next to its handler
 * (the reference filesystem server's layout).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Caller, CasketDoor, S3Failure } from './door.js';
import { BadArgument, type ObjectPath } from './paths.js';
import { refusal } from './refusals.js';
import { requestCaller } from './request-caller.js';
import { toolError } from './results.js';

export interface ToolEnv {
  door: CasketDoor;
  /** The caller of the request being handled, read at each use (request-caller.ts): never a field a pooled server keeps. */
  readonly caller: Caller;
  /** Largest file a text tool reads or writes, bytes. */
  maxTextBytes: number;
}

/**
 * The env every tool server is built with. It holds nothing of any request:
 * `caller` is read from the request being handled each time a tool asks, so
 * a handler keeps its own request's caller for its whole life, whichever
 * request the server serves meanwhile (issue 37, finding 1).
 */
export function toolEnv(door: CasketDoor, maxTextBytes: number): ToolEnv {
  return {
    door,
    maxTextBytes,
    get caller() {
      return requestCaller();
    },
  };
}

export type RegisterTool = (server: McpServer, env: ToolEnv) => void;

/** Runs a handler; bad arguments become tool errors the model can correct, never protocol errors. */
export async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof BadArgument) return toolError(`${e.message} Nothing was written.`, { error: 'invalid-argument' });
    throw e;
  }
}

export function refused(env: ToolEnv, tool: string, path: ObjectPath, failure: S3Failure, base?: string): Promise<CallToolResult> {
  return refusal({ door: env.door, caller: env.caller, tool, path, ...(base !== undefined && { base }) }, failure);
}

export function tooLarge(what: string, bytes: number, max: number): CallToolResult {
  return toolError(`Refused: ${what} is ${bytes} bytes, more than the ${max} bytes these tools handle. Nothing was written.`, { error: 'too-large', bytes, max_bytes: max, written: false });
}
