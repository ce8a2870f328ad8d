// deploy/k8s (kustomize base) read the way kubectl would: every resource the kustomization lists
// parses and passes its kind's API schema (kubernetes-models, which bundles the schemas: no cluster); the proxy is ready on /readyz with a PDB and an HPA; the
// controller runs two replicas; Services match pod labels and ports; every pod is scraped by
// Prometheus; secrets are referenced by name, never inlined; and every variable the gateway needs
// without a default is provided.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { VARIABLES, type VariableSpec } from '@gonka-gateway/shared';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { DEPLOY_DIR, readDeployFile, readYaml, readYamlDocuments, type Yaml } from './deploy-files.js';

const kustomization = readYaml('k8s/kustomization.yaml');
const resources: Yaml[] = (kustomization.resources as string[]).flatMap((file) =>
  readYamlDocuments(`k8s/${file}`),
);
const byKind = (kind: string) => resources.filter((r) => r.kind === kind);
const named = (kind: string, name: string) => byKind(kind).find((r) => r.metadata.name === name);
const configLiterals = Object.fromEntries(
  (kustomization.configMapGenerator[0].literals as string[]).map((l) => [
    l.slice(0, l.indexOf('=')),
    l.slice(l.indexOf('=') + 1),
  ]),
);

/** The minimal schema kubectl would refuse without: apiVersion per kind and required fields. */
const API_VERSIONS: Record<string, string> = {
  Deployment: 'apps/v1',
  Service: 'v1',
  PodDisruptionBudget: 'policy/v1',
  HorizontalPodAutoscaler: 'autoscaling/v2',
};

describe('deploy/k8s', () => {
  it('lists only existing files, each resource with a known apiVersion, a name and a spec', () => {
    expect(kustomization).toMatchObject({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
    });
    for (const file of kustomization.resources)
      expect(existsSync(join(DEPLOY_DIR, 'k8s', file)), file).toBe(true);
    for (const r of resources) {
      expect(API_VERSIONS[r.kind], r.kind).toBe(r.apiVersion);
      expect(r.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(r.spec).toBeTypeOf('object');
    }
    for (const d of byKind('Deployment')) {
      expect(d.spec.selector.matchLabels, d.metadata.name).toEqual(
        expect.objectContaining(d.spec.template.metadata.labels),
      );
      for (const c of d.spec.template.spec.containers) {
        expect(c.image).toBe('gonka-gateway');
        for (const probe of [c.readinessProbe, c.livenessProbe]) {
          const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
          expect(
            c.ports.map((p: Yaml) => p.name),
            `${d.metadata.name} probe port`,
          ).toContain(port);
        }
      }
    }
  });

  it('every resource passes the Kubernetes API schema of its kind (kubernetes-models, offline)', () => {
    const models: Record<string, new (data: Yaml) => { validate(): void }> = {
      Deployment,
      Service,
      PodDisruptionBudget,
      HorizontalPodAutoscaler,
    };
    for (const r of resources)
      expect(() => new models[r.kind]!(r).validate(), `${r.kind} ${r.metadata.name}`).not.toThrow();
    // The schema check can fail: a wrong type is refused.
    const proxy = named('Deployment', 'gateway-proxy');
    expect(() => new Deployment({ ...proxy, spec: { ...proxy.spec, replicas: 'two' } }).validate()).toThrow(
      /replicas/,
    );
  });

  it('proxy: readiness on /readyz, liveness with the spec timings, a PDB and an HPA that keep two', () => {
    const proxy = named('Deployment', 'gateway-proxy');
    const c = proxy.spec.template.spec.containers[0];
    expect(c.args).toEqual(['proxy']);
    expect(c.ports[0].containerPort).toBe(Number(VARIABLES.DEVSHARD_PORT.default));
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe).toMatchObject({
      initialDelaySeconds: 10,
      periodSeconds: 30,
      timeoutSeconds: 5,
      failureThreshold: 3,
    });
    expect(named('PodDisruptionBudget', 'gateway-proxy').spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: proxy.spec.selector.matchLabels },
    });
    expect(named('HorizontalPodAutoscaler', 'gateway-proxy').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'gateway-proxy' },
      minReplicas: 2,
    });
    const internal = c.env.find((e: Yaml) => e.name === 'GATEWAY_PROXY_INTERNAL_URL');
    expect(internal.value).toBe('http://$(POD_IP):8080');
    expect(c.env.findIndex((e: Yaml) => e.name === 'POD_IP')).toBeLessThan(c.env.indexOf(internal));
  });

  it('controller: two replicas (one active by leader lease), its own port, the storage directory mounted', () => {
    const controller = named('Deployment', 'gateway-controller');
    expect(controller.spec.replicas).toBe(2);
    const c = controller.spec.template.spec.containers[0];
    expect(c.args).toEqual(['controller']);
    expect(c.ports[0].containerPort).toBe(Number(VARIABLES.GATEWAY_CONTROLLER_PORT.default));
    expect(c.volumeMounts[0].mountPath).toBe(
      (VARIABLES.DEVSHARD_STORAGE_DIR as VariableSpec<string>).default,
    );
  });

  it('Services select their pods and reach the named ports; the proxies reach the controller Service', () => {
    for (const svc of byKind('Service')) {
      const target = byKind('Deployment').find((d) =>
        Object.entries(svc.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
      );
      expect(target, svc.metadata.name).toBeDefined();
      for (const p of svc.spec.ports) {
        expect(target.spec.template.spec.containers[0].ports.map((x: Yaml) => x.name)).toContain(
          p.targetPort,
        );
      }
    }
    expect(configLiterals.GATEWAY_CONTROLLER_URL).toBe(
      `http://gateway-controller:${named('Service', 'gateway-controller').spec.ports[0].port}`,
    );
  });

  it('every pod is scraped by Prometheus on its own port', () => {
    for (const d of byKind('Deployment')) {
      const a = d.spec.template.metadata.annotations;
      expect(a['prometheus.io/scrape']).toBe('true');
      expect(a['prometheus.io/path']).toBe('/metrics');
      expect(Number(a['prometheus.io/port'])).toBe(d.spec.template.spec.containers[0].ports[0].containerPort);
    }
  });

  it('secrets are referenced by name, never inlined, and cover every required variable with the config map', () => {
    expect(byKind('Secret')).toEqual([]);
    expect(kustomization.secretGenerator).toBeUndefined();
    const secretKeys = [...readDeployFile('k8s/gateway-secrets.env.example').matchAll(/^([A-Z_]+)=/gm)].map(
      (m) => m[1]!,
    );
    for (const d of byKind('Deployment')) {
      const c = d.spec.template.spec.containers[0];
      expect(c.envFrom).toEqual([
        { configMapRef: { name: 'gateway-config' } },
        { secretRef: { name: 'gateway-secrets' } },
      ]);
      const provided = new Set([
        ...Object.keys(configLiterals),
        ...secretKeys,
        ...(c.env ?? []).map((e: Yaml) => e.name),
      ]);
      for (const [name, spec] of Object.entries(VARIABLES)) {
        if ((spec as VariableSpec<unknown>).required) expect(provided.has(name), name).toBe(true);
      }
      for (const name of [
        'DEVSHARD_PRIVATE_KEY',
        'DATABASE_URL',
        'REDIS_URL',
        'GATEWAY_ENCRYPTION_KEY',
        'DEVSHARDS_JSON',
        'GATEWAY_LISTEN_HOST',
      ]) {
        expect(provided.has(name), name).toBe(true);
      }
      for (const name of secretKeys)
        expect(configLiterals[name], `${name} must not be in the config map`).toBeUndefined();
    }
    for (const name of Object.keys(configLiterals)) expect(Object.keys(VARIABLES)).toContain(name);
  });
});
