/**
 * The credentials file as `casket keys` edits it: read, change one entry,
 * write back without ever leaving a half-written file where a running casket
 * (cli.ts watches it) or another `casket keys` could read it.
 *
 * - Atomic replace: the new text goes to a temporary file in the same
 *   directory, is fsynced, and renamed over the old one (rename(2) is atomic
 *   within a file system), then the directory is fsynced so the rename itself
 *   survives a power loss. A reader sees the old file or the new one.
 * - Mode 0600 from the moment the temporary file exists: the file holds secrets.
 * - One editor at a time: an exclusive lock file beside it (O_CREAT|O_EXCL),
 *   so two `casket keys add` never lose one of the keys.
 * - Entries are kept as the JSON they are, fields casket does not know
 *   included; the new text is checked with the same parser casket loads it with
 *   before it replaces anything.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { ConfigError, parseCredentialsFile, parseJsonFile } from '../config.js';

export type RawEntry = Record<string, unknown> & { accessKey: string; secretKey: string };

export interface CredentialsDoc {
  /** Every field of the file's top-level object, kept as it was. */
  doc: Record<string, unknown>;
  entries: RawEntry[];
}

/** The file's entries; an absent file is an empty list (the first `add` creates it). */
export function readCredentials(file: string): CredentialsDoc {
  if (!existsSync(file)) return { doc: {}, entries: [] };
  const text = readFileSync(file, 'utf8');
  // The same checks casket applies when it loads the file: a file it would refuse is not edited further.
  parseCredentialsFile(text, file);
  const doc = parseJsonFile(text, file) as Record<string, unknown>;
  return { doc, entries: doc.credentials as RawEntry[] };
}

/** Writes `entries` in place of the file's, atomically, mode 0600. */
export function writeCredentials(file: string, current: CredentialsDoc, entries: RawEntry[]): void {
  const text = `${JSON.stringify({ ...current.doc, credentials: entries }, null, 2)}\n`;
  parseCredentialsFile(text, file);
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true });
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, file);
  } catch (e) {
    rmSync(temp, { force: true });
    throw e;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** A lock older than this was left by a process that died: taken over. */
const STALE_LOCK_MS = 30_000;

/** Runs `edit` holding the file's lock (`<file>.lock`), waiting up to 5 s for another editor. */
export async function withLock<T>(file: string, edit: () => T): Promise<T> {
  const lock = `${file}.lock`;
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new ConfigError(`${file} is being edited by another casket keys (lock ${lock}); try again, or remove the lock if no such command runs`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return edit();
  } finally {
    rmSync(lock, { force: true });
  }
}
