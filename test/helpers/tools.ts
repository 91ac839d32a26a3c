/**
 * Optional tools (s3cmd, rclone, redis-server, an RGW endpoint): a test that
 * needs one may skip on a user's machine, but in CI (CI=true or
 * CASKET_REQUIRE_ALL=1) a missing tool is a failure, never a skip.
 */
import { execFileSync } from 'node:child_process';

export const REQUIRE_ALL = process.env.CI === 'true' || process.env.CASKET_REQUIRE_ALL === '1';

export function hasCommand(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** true when the tool is there; false (skip) on a user's machine; throws in CI. */
export function need(what: string, available: boolean): boolean {
  if (available) return true;
  if (REQUIRE_ALL) throw new Error(`${what} is required in CI (CI=true) but is not available`);
  return false;
}
