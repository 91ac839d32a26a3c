#!/usr/bin/env node
/**
 * `casket`: flags and env → config → start. The only module that touches
 * process.* (argv, env, exit, signals, stdout). With no credentials given it
 * makes one admin credential on first start, keeps it in the data dir
 * (mode 0600) and prints its secret that once, with the endpoint.
 *
 * SIGTERM or SIGINT stops taking connections and lets requests in flight
 * finish (up to --drain-ms), then exits 0; a second signal stops at once.
 *
 * Credentials and their policies reload without a restart (docs/design.md §7): on
 * SIGHUP and when the credentials file changes (polled with fs.watchFile,
 * which also sees editors that replace the file by renaming). A file that
 * does not parse keeps the credentials in force and logs why.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Credential } from './auth/credentials.js';
import { buildConfig, ConfigError, OPTIONS, parseArgs, parseConfigFile, parseCredentialsFile, withFile, type Config } from './config.js';
import { createLogger } from './log.js';
import { checkDataDir, checkListen, checkNotifications, checkTls, listenError, readOperatorFile } from './preflight.js';
import { notReadyReason } from './readiness.js';
import { startCasket } from './server.js';

/** The version in package.json, which ships beside dist/ (npm pack, the Docker image). */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

const USAGE = `casket — an S3 proxy that gives every S3 client compare-and-swap

usage: casket [options]
       casket mcp … | casket rollback … | casket keys …   (each with --help)
       casket --version | --help

${OPTIONS.map((o) => `  ${o.flag.padEnd(24)} ${o.help}\n  ${''.padEnd(24)} env ${o.env}`).join('\n')}
`;

/**
 * The data dir's credentials file: every key in it (`casket keys` adds more),
 * or one admin key made now. The first admin key is the one the banner names.
 */
function generatedCredentials(dataDir: string): { credentials: Credential[]; credential: Credential; created: boolean } {
  const file = join(dataDir, 'credentials.json');
  if (existsSync(file)) {
    const credentials = parseCredentialsFile(readFileSync(file, 'utf8'), file);
    const credential = credentials.find((c) => c.admin) ?? credentials[0];
    if (credential) return { credentials, credential, created: false };
  }
  const credential: Credential = {
    accessKeyId: `CASKET${randomBytes(7).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
    admin: true,
  };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ credentials: [{ accessKey: credential.accessKeyId, secretKey: credential.secretAccessKey, admin: true }] }, null, 2)}\n`, { mode: 0o600 });
  return { credentials: [credential], credential, created: true };
}


/** How often casket asks itself whether it is ready yet, after starting not ready. */
const READY_POLL_MS = 2_000;

async function main(): Promise<void> {
  // File-backed bodies are written and fsynced on libuv's pool; 4 threads
  // (the default) cap concurrent PUTs (measured: 2,850 → 3,700 PUT/s of files).
  process.env.UV_THREADPOOL_SIZE ??= '16';
  const argv = process.argv.slice(2);
  if (argv[0] === 'mcp') {
    // The MCP stdio bridge and token minting (src/mcp/command.ts): a client of a running casket.
    const { mcpCommand, MCP_USAGE } = await import('./mcp/command.js');
    if (argv.includes('--help') || argv.includes('-h')) process.stdout.write(MCP_USAGE);
    else await mcpCommand(argv.slice(1), process.env, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
    return;
  }
  if (argv[0] === 'keys') {
    // Make, list, rotate and remove keys in the credentials file (src/keys/command.ts).
    const { keysCommand } = await import('./keys/command.js');
    process.exitCode = await keysCommand(argv.slice(1), process.env, { stdout: process.stdout, stderr: process.stderr });
    return;
  }
  if (argv[0] === 'rollback') {
    // Undo one agent's writes (src/rollback/command.ts): a client of a running casket, like `casket mcp`.
    const { rollbackCommand, ROLLBACK_USAGE } = await import('./rollback/command.js');
    if (argv.includes('--help') || argv.includes('-h')) process.stdout.write(ROLLBACK_USAGE);
    else process.exitCode = await rollbackCommand(argv.slice(1), process.env, { stdout: process.stdout, stderr: process.stderr });
    return;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`casket ${version()}\n`);
    return;
  }
  // Every operator mistake is found here, before anything is created: one
  // line on stderr and exit code 2 (the convention for usage errors).
  let raw = parseArgs(argv, process.env);
  if (raw.config) raw = withFile(raw, parseConfigFile(readOperatorFile('--config', raw.config), raw.config));
  const fromFile = raw.credentials ? parseCredentialsFile(readOperatorFile('--credentials', raw.credentials), raw.credentials) : [];
  const config: Config = buildConfig(raw, fromFile);
  if (config.tlsCert !== undefined && config.tlsKey !== undefined) checkTls(config.tlsCert, config.tlsKey);
  if (config.notificationsFile !== undefined) checkNotifications(config.notificationsFile);
  checkDataDir(config.dataDir);
  await checkListen(config.host, config.port);

  const log = createLogger(config.logLevel, config.logFlushMs);
  let credentials = config.credentials;
  let generated: Credential | undefined;
  let generatedNow = false;
  if (credentials.length === 0) {
    const g = generatedCredentials(config.dataDir);
    credentials = g.credentials;
    generated = g.credential;
    generatedNow = g.created;
  }
  // Without --credentials, the data dir's file is the one `casket keys` edits: reloaded the same way.
  const credentialsFile = raw.credentials ?? (generated ? join(config.dataDir, 'credentials.json') : undefined);
  if (credentialsFile !== undefined && (statSync(credentialsFile).mode & 0o077) !== 0) {
    log.warn({ file: credentialsFile, mode: (statSync(credentialsFile).mode & 0o777).toString(8) }, 'the credentials file is readable by group or others: chmod 600 it');
  }
  // It holds the webhook secrets.
  if (config.notificationsFile !== undefined && (statSync(config.notificationsFile).mode & 0o077) !== 0) {
    log.warn({ file: config.notificationsFile, mode: (statSync(config.notificationsFile).mode & 0o777).toString(8) }, 'the notifications file is readable by group or others: chmod 600 it');
  }
  const casket = await startCasket(config, credentials, log).catch((e: unknown) => {
    throw listenError(e, config.host, config.port) ?? e;
  });
  const reload = (why: string) => {
    if (credentialsFile === undefined) {
      log.info({ why }, 'no --credentials file: nothing to reload');
      return;
    }
    try {
      const next = buildConfig(raw, parseCredentialsFile(readFileSync(credentialsFile, 'utf8'), credentialsFile)).credentials;
      if (next.length === 0) throw new ConfigError(`${credentialsFile}: no credentials`);
      casket.reloadCredentials(next);
      log.info({ file: credentialsFile, why, credentials: next.length }, 'credentials reloaded');
    } catch (e) {
      log.error({ file: credentialsFile, why, err: e instanceof ConfigError ? e.message : e }, 'credentials not reloaded: keeping the previous ones');
    }
  };
  // Webhook targets (--notifications) reload the same way; a bad file keeps the targets running.
  const notificationsFile = config.notificationsFile;
  const reloadNotifications = (why: string) => {
    if (notificationsFile === undefined) return;
    casket.reloadNotifications().then(
      (webhooks) => log.info({ file: notificationsFile, why, webhooks }, 'notifications reloaded'),
      (e: unknown) => log.error({ file: notificationsFile, why, err: e instanceof Error ? e.message : e }, 'notifications not reloaded: keeping the previous ones'),
    );
  };
  process.on('SIGHUP', () => {
    reload('SIGHUP');
    reloadNotifications('SIGHUP');
  });
  if (notificationsFile !== undefined) {
    watchFile(notificationsFile, { interval: 1000 }, (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) reloadNotifications('file changed');
    }).unref();
  }
  if (credentialsFile !== undefined) {
    watchFile(credentialsFile, { interval: 1000 }, (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) reload('file changed');
    }).unref();
  }
  // The banner first: whoever waits for the ready line can read it already.
  // The secret is shown once, when it is made: later starts name the file
  // that keeps it, so it does not reach a log collector on every restart.
  if (generated) {
    const file = join(config.dataDir, 'credentials.json');
    process.stderr.write(
      `\ncasket is serving S3 at ${casket.url}\n` +
        `  access key: ${generated.accessKeyId}\n` +
        (generatedNow
          ? `  secret key: ${generated.secretAccessKey}\n  (shown this once; kept in ${file}, mode 0600)\n`
          : `  secret key: in ${file}\n`) +
        `  try: AWS_ACCESS_KEY_ID=${generated.accessKeyId} AWS_SECRET_ACCESS_KEY=... aws --endpoint-url ${casket.url} s3 ls\n` +
        `  console: ${casket.url}/_casket/console (log in with this admin key)\n\n`,
    );
  }
  // "ready" only when /_casket/ready would say so: with the upstream down,
  // casket says it listens and why it is not ready, then "ready" once it is.
  // Not awaited: the signal handlers below are in place while it is asked.
  const started = {
    endpoint: casket.url,
    // The process to signal: under `npm start` it is not the one the user started.
    pid: process.pid,
    backend: config.upstream ? config.upstream.url : 'embedded',
    dataDir: config.dataDir,
    guard: config.guard,
    agentWrites: config.agentWrites,
    credentials: credentials.length,
    ...(generated && { accessKeyId: generated.accessKeyId }),
  };
  let readyTimer: NodeJS.Timeout | undefined;
  const untilReady = (first: boolean) => {
    casket.readiness().then(
      (r) => {
        if (r.status === 200) log.info(first ? started : { endpoint: casket.url }, 'casket is ready');
        else {
          if (first) log.warn({ ...started, notReady: notReadyReason(r) }, `casket is listening; not ready: ${notReadyReason(r)}`);
          readyTimer = setTimeout(() => untilReady(false), READY_POLL_MS).unref();
        }
      },
      () => {
        readyTimer = setTimeout(() => untilReady(false), READY_POLL_MS).unref();
      },
    );
  };
  untilReady(true);
  // A log line that cannot be written (stdout's reader gone: EPIPE) must
  // not keep casket from stopping, so the stop starts before it is logged.
  const note = (fields: object, msg: string) => {
    try {
      log.info(fields, msg);
    } catch {
      /* nowhere to say it */
    }
  };
  let closing = false;
  const stop = (signal: string) => {
    if (closing) {
      casket.close(0).catch(() => {});
      note({ signal }, 'second signal: closing the connections still open');
      return;
    }
    closing = true;
    clearTimeout(readyTimer);
    if (credentialsFile !== undefined) unwatchFile(credentialsFile);
    if (notificationsFile !== undefined) unwatchFile(notificationsFile);
    casket.close(config.drainMs).then(
      () => process.exit(0),
      (e: unknown) => {
        note({ err: e }, 'error while stopping');
        process.exit(1);
      },
    );
    note({ signal, drainSeconds: config.drainMs / 1000 }, 'casket is stopping: finishing the requests in flight');
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  if (e instanceof ConfigError || (e as Error).name === 'UsageError') {
    process.stderr.write(`casket: ${(e as Error).message}\n`);
    process.exit(2);
  }
  // Something in the way at start (Redis not answering, a disk that fails):
  // its message is the news; casket's stack only when asked for.
  const debug = process.argv.includes('debug') || process.env.CASKET_LOG_LEVEL === 'debug';
  process.stderr.write(`casket: cannot start: ${(e as Error).message ?? String(e)}\n${debug && (e as Error).stack ? `${(e as Error).stack}\n` : ''}`);
  process.exit(1);
});
