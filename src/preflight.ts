/**
 * What cli.ts checks before it creates anything (the data dir, the generated
 * credential, the state database): the files an operator named exist and
 * parse, the data dir can be one, and the address can be listened on. Each
 * mistake becomes a ConfigError, one line naming the flag and the file or
 * address, instead of a stack trace after half a start.
 */
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { ConfigError, parseJsonFile } from './config.js';
import { NotificationsError, parseNotifications } from './events/notifications.js';

/** Why a file or directory could not be used, in words (Node's codes: https://nodejs.org/api/errors.html#common-system-errors). */
function fsReason(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory, not a file';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    default:
      return code ?? (e as Error).message;
  }
}

/** The text of a file the operator named with `flag`. */
export function readOperatorFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${flag} ${path}: ${fsReason(e)}`);
  }
}

/** The certificate and key load as a pair, as the HTTPS server will load them. */
export function checkTls(cert: string, key: string): void {
  const certText = readOperatorFile('--tls-cert', cert);
  const keyText = readOperatorFile('--tls-key', key);
  try {
    createSecureContext({ cert: certText, key: keyText });
  } catch {
    // OpenSSL's message names its decoder, not the files: say which flags to look at.
    throw new ConfigError(`--tls-cert ${cert} and --tls-key ${key}: not a PEM certificate and its private key`);
  }
}

/** The --notifications file parses as webhook targets (events/notifications.ts); its messages never quote a secret. */
export function checkNotifications(path: string): void {
  try {
    parseNotifications(parseJsonFile(readOperatorFile('--notifications', path), path), path);
  } catch (e) {
    if (e instanceof NotificationsError) throw new ConfigError(`--notifications ${e.message}`);
    throw e;
  }
}

/**
 * The data dir is a writable directory, or can be made as one: its nearest
 * existing ancestor is a writable directory.
 */
export function checkDataDir(dir: string): void {
  let path = resolve(dir);
  let missing = false;
  while (!existsSync(path)) {
    missing = true;
    const parent = dirname(path);
    if (parent === path) break;
    path = parent;
  }
  const what = missing ? `cannot be created: ${path} is` : 'is';
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (e) {
    throw new ConfigError(`--data-dir ${dir}: ${fsReason(e)}`);
  }
  if (!isDir) throw new ConfigError(`--data-dir ${dir}: ${what} a file, not a directory`);
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch {
    throw new ConfigError(`--data-dir ${dir}: ${missing ? `cannot be created: ${path} is` : 'is'} not writable by this user`);
  }
}

/** One line for an error from listening on host:port (also when the server itself fails to listen). */
export function listenError(e: unknown, host: string, port: number): ConfigError | undefined {
  const where = `--listen ${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch ((e as { code?: string }).code) {
    case 'EADDRINUSE':
      return new ConfigError(`${where}: the port is in use (another casket? pick another with --listen)`);
    case 'EACCES':
      return new ConfigError(`${where}: permission denied (ports below 1024 need privileges)`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(`${where}: this machine has no such address`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return new ConfigError(`${where}: no such host`);
    default:
      return undefined;
  }
}

/** Listens on host:port and closes again, so a busy port fails before anything is created. */
export async function checkListen(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolvePromise, reject) => {
    probe.once('error', (e) => reject(listenError(e, host, port) ?? e));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolvePromise()));
  });
}
