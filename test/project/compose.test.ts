/**
 * compose.yaml is for users (no Docker engine runs here): it must stay valid
 * YAML, and every CASKET_* variable it sets must be one casket reads — a
 * renamed flag must not leave the compose file silently configuring nothing.
 * Caskets in front of one bucket must share one state store (design §11), the
 * images must be pinned, and the healthcheck must work when casket serves TLS:
 * it is run here, as Docker would run it, against a real casket on HTTPS.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/config.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { testTls } from '../helpers/tls.js';

const file = resolve(import.meta.dirname, '../../compose.yaml');

interface Service {
  environment?: Record<string, string>;
  command?: string;
  profiles?: string[];
  image?: string;
  build?: string;
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

let loaded: { services: Record<string, Service> } | undefined;
function load(): { services: Record<string, Service> } {
  if (loaded) return loaded;
  // PyYAML ships with the machine's python3 (boto3 depends on it); it resolves anchors and merge keys.
  const json = execFileSync('python3', ['-c', 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file], { encoding: 'utf8' });
  return (loaded = JSON.parse(json));
}

const caskets = () => Object.entries(load().services).filter(([n]) => n.startsWith('casket'));

describe('compose.yaml', () => {
  it('defines casket in front of MinIO, Redis for its state, and a replicas profile', () => {
    const { services } = load();
    expect(Object.keys(services).sort()).toEqual(['casket', 'casket-replica-a', 'casket-replica-b', 'minio', 'redis']);
    expect(services.casket!.environment!.CASKET_UPSTREAM).toBe('http://minio:9000');
    for (const name of ['casket-replica-a', 'casket-replica-b']) expect(services[name]!.profiles).toEqual(['replicas']);
  });

  it('puts every casket in front of the bucket on one Redis, with --upstream-replicas', () => {
    const { services } = load();
    expect(services.redis!.profiles, 'redis starts with every casket').toBeUndefined();
    for (const [name, service] of caskets()) {
      expect(service.environment, name).toMatchObject({ CASKET_STATE: 'redis', CASKET_REDIS_URL: 'redis://redis:6379', CASKET_UPSTREAM_REPLICAS: 'true' });
      expect(service.depends_on?.redis?.condition, name).toBe('service_healthy');
    }
  });

  it('pins every image by version', () => {
    for (const [name, service] of Object.entries(load().services)) {
      if (service.build) continue;
      expect(service.image, name).toMatch(/:[^:]*\d[^:]*$/);
      expect(service.image, name).not.toMatch(/:(latest|stable|edge)$|:\d+(-alpine)?$/);
    }
  });

  it('runs casket from the image the Dockerfile builds: no source mounted, nothing installed at start', () => {
    for (const [name, service] of caskets()) {
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

  describe('the casket healthcheck, run as Docker runs it', () => {
    let plain: RunningCasket;
    let tls: RunningCasket;
    beforeAll(async () => {
      const { certFile, keyFile } = testTls();
      [plain, tls] = await Promise.all([startCasket(), startCasket({ args: ['--tls-cert', certFile, '--tls-key', keyFile] })]);
    });
    afterAll(async () => {
      await Promise.all([plain?.stop(), tls?.stop()]);
    });

    function healthcheck(env: Record<string, string>): number | null {
      const test = caskets()[0]![1].healthcheck!.test;
      expect(test[0]).toBe('CMD');
      const [command, ...args] = test.slice(1);
      return spawnSync(command!, args, { env: { PATH: process.env.PATH!, ...env }, timeout: 10_000 }).status;
    }

    it('passes over http and over https (--tls-*), fails when nothing answers', () => {
      expect(healthcheck({ CASKET_LISTEN: `0.0.0.0:${plain.port}` })).toBe(0);
      expect(healthcheck({ CASKET_LISTEN: `0.0.0.0:${tls.port}`, CASKET_TLS_CERT: '/tls/server.pem', CASKET_TLS_KEY: '/tls/server-key.pem' })).toBe(0);
      expect(healthcheck({ CASKET_LISTEN: `0.0.0.0:${tls.port}` })).not.toBe(0);
    });
  });
});
