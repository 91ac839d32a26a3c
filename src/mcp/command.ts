/**
 * `casket mcp …` (docs/design.md §8), parsed here and run with the process's streams
 * cli.ts hands over:
 *   casket mcp --endpoint URL --access-key K --secret-key S [--agent NAME]
 *       the stdio bridge (stdio.ts); env CASKET_MCP_ENDPOINT,
 *       CASKET_MCP_ACCESS_KEY, CASKET_MCP_SECRET_KEY, CASKET_MCP_AGENT.
 *   casket mcp token --endpoint URL --access-key K --secret-key S [--agent NAME] [--ttl SECONDS]
 *       prints a bearer token for Streamable HTTP clients (token.ts), once
 *       the casket at URL has let it in (token-check.ts); --offline instead
 *       of --endpoint mints it unchecked.
 * Secrets come from flags or env, and are never printed or logged.
 */
import type { Readable, Writable } from 'node:stream';
import { BRIDGE_TOKEN_TTL_SECONDS, runStdioBridge } from './stdio.js';
import { checkToken } from './token-check.js';
import { mintToken } from './token.js';

export const MCP_USAGE = `usage:
  casket mcp --endpoint URL --access-key K --secret-key S [--agent NAME]
      serve casket's file tools over stdio, relayed to the casket at URL
      (env CASKET_MCP_ENDPOINT, CASKET_MCP_ACCESS_KEY, CASKET_MCP_SECRET_KEY, CASKET_MCP_AGENT)
  casket mcp token --endpoint URL --access-key K --secret-key S [--agent NAME] [--ttl SECONDS]
      print a bearer token for /_casket/mcp (default --ttl 86400, env CASKET_MCP_TOKEN_TTL), once the casket
      at URL has accepted it: a wrong secret, or an agent the key may not act as,
      is refused here (exit 2) rather than at the token's first use
  casket mcp token --offline --access-key K --secret-key S [--agent NAME] [--ttl SECONDS]
      mint without asking a casket: nothing is checked
`;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Flags that take no value. */
const SWITCHES = new Set(['--offline']);

const FLAGS: Record<string, string> = { '--endpoint': 'CASKET_MCP_ENDPOINT', '--access-key': 'CASKET_MCP_ACCESS_KEY', '--secret-key': 'CASKET_MCP_SECRET_KEY', '--agent': 'CASKET_MCP_AGENT', '--ttl': 'CASKET_MCP_TOKEN_TTL' };

function parse(argv: readonly string[], env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(FLAGS)) out[flag] = env[name];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (SWITCHES.has(arg)) {
      out[arg] = 'true';
      continue;
    }
    if (!(flag in FLAGS)) throw new UsageError(`unknown option ${flag}\n${MCP_USAGE}`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value\n${MCP_USAGE}`);
    out[flag] = value;
  }
  return out;
}

function required(o: Record<string, string | undefined>, flag: string): string {
  const v = o[flag];
  if (v === undefined || v === '') throw new UsageError(`${flag} (or env ${FLAGS[flag]}) is required\n${MCP_USAGE}`);
  return v;
}

export async function mcpCommand(argv: readonly string[], env: Record<string, string | undefined>, io: { stdin: Readable; stdout: Writable; stderr: Writable }): Promise<void> {
  if (argv[0] === 'token') {
    const o = parse(argv.slice(1), env);
    const ttl = Number(o['--ttl'] ?? 86400);
    if (!Number.isInteger(ttl) || ttl < 1) throw new UsageError(`--ttl (or env CASKET_MCP_TOKEN_TTL) is a whole number of seconds\n${MCP_USAGE}`);
    const agent = o['--agent'];
    const offline = o['--offline'] === 'true';
    if (!offline && !o['--endpoint']) throw new UsageError(`--endpoint URL (or env CASKET_MCP_ENDPOINT) is required: casket checks the token before it is printed (or --offline to mint it unchecked)\n${MCP_USAGE}`);
    const token = mintToken(required(o, '--access-key'), required(o, '--secret-key'), { ...(agent && { agent }), ttlSeconds: ttl });
    if (!offline) {
      const refusal = await checkToken(o['--endpoint']!, token);
      if (refusal !== undefined) throw new UsageError(refusal);
    }
    io.stdout.write(`${token}\n`);
    return;
  }
  // The bridge mints its own short-lived token per request (stdio.ts): a token's
  // options given to it would be ignored, so they are refused, not dropped.
  const tokenOnly = argv.map((a) => a.split('=')[0]!).find((flag) => flag === '--ttl' || flag === '--offline');
  if (tokenOnly !== undefined) throw new UsageError(`${tokenOnly} is an option of \`casket mcp token\`: the bridge mints a fresh ${BRIDGE_TOKEN_TTL_SECONDS}-second token for every request\n${MCP_USAGE}`);
  const o = parse(argv, env);
  const agent = o['--agent'];
  await runStdioBridge(
    // Stryker disable next-line ConditionalExpression: an empty agent claim is none to casket (resolveAgent, guard/identity.ts), as an absent one
    { endpoint: required(o, '--endpoint'), accessKey: required(o, '--access-key'), secretKey: required(o, '--secret-key'), ...(agent && { agent }) },
    io.stdin,
    io.stdout,
    (line) => io.stderr.write(`${line}\n`),
  );
}
