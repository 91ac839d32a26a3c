/**
 * compose.yaml is for users (no Docker engine runs here): it must stay valid
 * YAML, and every CASKET_* variable it sets must be one casket reads — a
 * renamed flag must not leave the compose file silently configuring nothing.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/config.js';

const file = resolve(import.meta.dirname, '../../compose.yaml');

function load(): { services: Record<string, { environment?: Record<string, string>; command?: string; profiles?: string[]; image?: string; build?: string; volumes?: string[] }> } {
  // PyYAML ships with the machine's python3 (boto3 depends on it); it resolves anchors and merge keys.
  const json = execFileSync('python3', ['-c', 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file], { encoding: 'utf8' });
  return JSON.parse(json);
}

describe('compose.yaml', () => {
  it('defines casket in front of MinIO and a replicas profile with Redis', () => {
    const { services } = load();
    expect(Object.keys(services).sort()).toEqual(['casket', 'casket-replica-a', 'casket-replica-b', 'minio', 'redis']);
    expect(services.casket!.environment!.CASKET_UPSTREAM).toBe('http://minio:9000');
    for (const name of ['casket-replica-a', 'casket-replica-b']) {
      expect(services[name]!.profiles).toEqual(['replicas']);
      expect(services[name]!.environment).toMatchObject({ CASKET_STATE: 'redis', CASKET_REDIS_URL: 'redis://redis:6379' });
    }
  });

  it('runs casket from the image the Dockerfile builds: no source mounted, nothing installed at start', () => {
    for (const [name, service] of Object.entries(load().services).filter(([n]) => n.startsWith('casket'))) {
      expect(service.build, name).toBe('.');
      expect(service.command, name).toBeUndefined();
      expect(service.volumes, name).toEqual([expect.stringMatching(/^[a-z-]+-data:\/data$/)]);
    }
  });

  it('sets only variables casket reads', () => {
    const known = new Set(OPTIONS.map((o) => o.env));
    for (const [name, service] of Object.entries(load().services)) {
      for (const variable of Object.keys(service.environment ?? {}).filter((v) => v.startsWith('CASKET_'))) {
        expect(known.has(variable), `${name}: ${variable}`).toBe(true);
      }
    }
  });
});
