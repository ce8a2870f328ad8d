// deploy/Dockerfile without a Docker engine: its shape is checked (node:24-slim, multi-stage,
// non-root, entrypoints), then its build, prod-deps and runtime stages are replayed on this host in
// temp dirs — the same manifests, the build stage's own lines on a build context filtered by
// Dockerfile.dockerignore (installs offline, from the local store), the same `pnpm install --prod`
// line, the same native-binding check, the same dist folders copied from that build, which must hold
// no test support — and both entrypoints are started from that replay against real
// Postgres and Redis, answering their health routes.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { dropTestDatabase, freePort } from '@gonka-gateway/shared/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { clearRedisPrefix } from '../devnet-state.js';
import { nodeArgsFor, REPO_ROOT } from '../ts-process.js';
import { readDeployFile } from './deploy-files.js';

const dockerfile = readDeployFile('Dockerfile');
const lines = dockerfile.split('\n');
/** How the Dockerfile names its base image argument in FROM lines. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ARG syntax.
const NODE_IMAGE_ARG = '${NODE_IMAGE}';
const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => ({
  image: m[1]!,
  name: m[2]!,
}));
const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
const entrypoint = readDeployFile('image/entrypoint.sh');

/** One stage's instructions, from its FROM line to the next (comments and blank lines left out). */
function stageLines(name: string): string[] {
  const start = lines.findIndex((l) => l.startsWith('FROM ') && l.endsWith(` AS ${name}`));
  const end = lines.findIndex((l, i) => i > start && l.startsWith('FROM '));
  return lines.slice(start + 1, end === -1 ? undefined : end).filter((l) => l !== '' && !l.startsWith('#'));
}

/** Dockerfile.dockerignore's patterns (a leading double star, `*` and plain paths) as expressions. */
const contextIgnores = readDeployFile('Dockerfile.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'))
  .map((pattern) => {
    const body = pattern
      .split('**/')
      .map((part) =>
        part
          .split('*')
          .map((t) => t.replace(/[.+?^$()|[\]{}\\]/g, '\\$&'))
          .join('[^/]*'),
      )
      .join('(?:.*/)?');
    return new RegExp(`^${body}$`);
  });
/** Whether a repository path (relative to the root) is left out of the image's build context. */
const outOfContext = (path: string) => contextIgnores.some((re) => re.test(path));

/** Files under a folder, as paths relative to `root`. */
const filesUnder = (root: string, dir: string) =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .map((path) => join(dir, path))
    .filter((path) => statSync(join(root, path)).isFile());

/** Workspace packages (from pnpm-workspace.yaml's globs: apps/*, packages/*, tests, deploy). */
const WORKSPACE = [
  ...['apps', 'packages'].flatMap((d) => readdirSync(join(REPO_ROOT, d)).map((n) => `${d}/${n}`)),
  'tests',
  'deploy',
].filter((p) => existsSync(join(REPO_ROOT, p, 'package.json')));

const nameOf = (dir: string) =>
  JSON.parse(readFileSync(join(REPO_ROOT, dir, 'package.json'), 'utf8')).name as string;
/** The workspace packages the image's programs need at run time (their dependency closure). */
function runtimeClosure(roots: string[]): string[] {
  const byName = new Map(WORKSPACE.map((d) => [nameOf(d), d]));
  const out = new Set<string>();
  const visit = (dir: string) => {
    if (out.has(dir)) return;
    out.add(dir);
    const deps = JSON.parse(readFileSync(join(REPO_ROOT, dir, 'package.json'), 'utf8')).dependencies ?? {};
    for (const dep of Object.keys(deps)) if (byName.has(dep)) visit(byName.get(dep)!);
  };
  for (const r of roots) visit(r);
  return [...out].sort();
}
const PROGRAMS = { proxy: 'apps/proxy', controller: 'apps/controller', gwctl: 'apps/cli' } as const;
const closure = runtimeClosure(Object.values(PROGRAMS));

const dbName = `gw_image_${randomBytes(5).toString('hex')}`;
const redisPrefix = `gwimage:${randomBytes(4).toString('hex')}:`;
afterAll(async () => {
  await dropTestDatabase(dbName);
  await clearRedisPrefix(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', redisPrefix);
});

describe('deploy/Dockerfile', () => {
  it('is multi-stage on node:24-slim and runs as the unprivileged node user', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-slim$/m);
    expect(stages.map((s) => s.name)).toEqual(['base', 'build', 'prod-deps', 'runtime']);
    expect(stages[0]!.image).toBe(NODE_IMAGE_ARG);
    expect(stages[3]!.image).toBe(NODE_IMAGE_ARG);
    expect(finalStage).toMatch(/^USER node$/m);
    expect(finalStage).toMatch(/^ENTRYPOINT \["gateway"\]$/m);
    expect(finalStage).toMatch(/^EXPOSE 8080 8081$/m);
  });

  it('copies every workspace manifest, and the build output of exactly what the programs need', () => {
    for (const dir of WORKSPACE) expect(dockerfile, dir).toContain(`COPY ${dir}/package.json ${dir}/`);
    const copiedDist = lines
      .map((l) => /^COPY --from=build \/app\/(\S+)\/dist \1\/dist$/.exec(l)?.[1])
      .filter((d): d is string => d !== undefined)
      .sort();
    expect(copiedDist).toEqual(closure);
    expect(closure).not.toContain('packages/devnet');
    expect(dockerfile).toContain(
      'COPY --from=build /app/packages/shared/migrations packages/shared/migrations',
    );
  });

  it('maps each entrypoint to a compiled main.js of a program whose tsconfig compiles src to dist', () => {
    for (const [program, dir] of Object.entries(PROGRAMS)) {
      expect(entrypoint).toContain(`${program}) exec node ${dir}/dist/main.js "$@" ;;`);
      // The benchmarks' compiled runtime runs each program as this entrypoint does.
      expect(nodeArgsFor(`${dir}/src/main.ts`, 'compiled')).toEqual([`${dir}/dist/main.js`]);
      expect(existsSync(join(REPO_ROOT, dir, 'src/main.ts')), dir).toBe(true);
      const tsconfig = JSON.parse(readFileSync(join(REPO_ROOT, dir, 'tsconfig.json'), 'utf8'));
      expect(tsconfig.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist' });
      const production = JSON.parse(readFileSync(join(REPO_ROOT, dir, 'tsconfig.build.json'), 'utf8'));
      expect(production.extends, dir).toBe('./tsconfig.json');
    }
  });

  it("builds with the production build, from a context without the host's installs and build output", () => {
    expect(stageLines('build')).toEqual([
      'RUN pnpm install --frozen-lockfile',
      'COPY tsconfig.base.json tsconfig.json tsconfig.build.json ./',
      'COPY packages packages',
      'COPY apps apps',
      'RUN pnpm build:prod',
    ]);
    for (const path of [
      'node_modules',
      'apps/proxy/node_modules',
      'packages/shared/dist',
      'apps/proxy/dist',
      '.git',
    ])
      expect(outOfContext(path), path).toBe(true);
    for (const path of ['packages/shared/src/index.ts', 'packages/shared/migrations', 'tsconfig.build.json'])
      expect(outOfContext(path), path).toBe(false);
  });

  it('replayed on this host: production dependencies only, the native binding loads, both entrypoints start and answer', async () => {
    const build = mkdtempSync(join(tmpdir(), 'gw-image-build-'));
    const app = mkdtempSync(join(tmpdir(), 'gw-image-'));
    /** A stage's RUN line in a replay folder; a pnpm install runs offline, from the local store. */
    const runLine = (command: string, cwd: string) => {
      const line = command.startsWith('pnpm install ') ? `${command} --offline` : command;
      try {
        execFileSync('sh', ['-c', line], { cwd, env: { ...process.env, CI: 'true' }, stdio: 'pipe' });
      } catch (err) {
        const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`RUN ${line} failed:\n${stdout ?? ''}${stderr ?? ''}`);
      }
    };
    try {
      // base (under both build and prod-deps): the manifests the Dockerfile copies.
      for (const root of [build, app]) {
        for (const m of dockerfile.matchAll(/^COPY (\S+(?: \S+)*) (\S+\/|\.\/)$/gm)) {
          const sources = m[1]!.split(' ');
          if (sources[0]!.startsWith('--')) continue;
          for (const source of sources) {
            if (
              !existsSync(join(REPO_ROOT, source)) ||
              !source.match(/(package\.json|pnpm-lock\.yaml|pnpm-workspace\.yaml)$/)
            )
              continue;
            const target = m[2] === './' ? join(root, source) : join(root, m[2]!, source.split('/').pop()!);
            mkdirSync(dirname(target), { recursive: true });
            cpSync(join(REPO_ROOT, source), target);
          }
        }
      }
      // build: the stage's own lines, in order, on the filtered build context.
      for (const line of stageLines('build')) {
        const run = /^RUN (.+)$/.exec(line)?.[1];
        const copy = /^COPY ((?:\S+ )+)(\S+)$/.exec(line);
        if (run !== undefined) runLine(run, build);
        else if (copy !== null) {
          const [sources, dest] = [copy[1]!.trim().split(' '), copy[2]!];
          for (const source of sources) {
            cpSync(
              join(REPO_ROOT, source),
              join(build, dest.endsWith('/') ? join(dest, basename(source)) : dest),
              {
                recursive: true,
                filter: (path) => !outOfContext(relative(REPO_ROOT, path)),
              },
            );
          }
        } else throw new Error(`the build stage's replay does not know: ${line}`);
      }
      // The production build holds no test support or tests, in any package (the image copies some).
      const built = ['packages', 'apps'].flatMap((top) =>
        readdirSync(join(build, top)).flatMap((name) => filesUnder(build, `${top}/${name}/dist`)),
      );
      expect(built).toContain('apps/proxy/dist/main.js');
      expect(built).toContain('packages/devshard/dist/session-face.js');
      expect(built.filter((f) => /\/dist\/(.*\/)?testing\//.test(f) || /\.test\.(js|d\.ts)/.test(f))).toEqual(
        [],
      );
      // prod-deps: the Dockerfile's own install line, offline from the local store.
      const install = /^RUN (pnpm install --frozen-lockfile --prod .*)$/m.exec(dockerfile)![1]!;
      execFileSync('sh', ['-c', `${install} --offline`], {
        cwd: app,
        env: { ...process.env, CI: 'true' },
        stdio: 'pipe',
      });
      // No compilers, test runners or dev tools in the image.
      const installed = readdirSync(join(app, 'node_modules/.pnpm'));
      expect(
        installed.filter((p) =>
          /^(vitest|typescript|tsx|esbuild|@biomejs|drizzle-kit|testcontainers)@/.test(p),
        ),
      ).toEqual([]);
      expect(installed.some((p) => p.startsWith('fastify@'))).toBe(true);
      const nativeCheck = /^RUN (node -e .*secp256k1\/bindings.*)$/m.exec(dockerfile)![1]!;
      execFileSync('sh', ['-c', nativeCheck.replaceAll('/app/', `${app}/`)], { stdio: 'pipe' });
      // runtime: the build output the Dockerfile copies.
      for (const m of dockerfile.matchAll(/^COPY --from=build \/app\/(\S+) (\S+)$/gm)) {
        cpSync(join(build, m[1]!), join(app, m[2]!), { recursive: true });
      }
      const shipped = closure.flatMap((dir) => filesUnder(app, `${dir}/dist`));
      expect(shipped.some((f) => f.includes('/testing/') || f.includes('.test.'))).toBe(false);
      const db = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
      db.pathname = `/${dbName}`;
      const [controllerPort, proxyPort] = [await freePort(), await freePort()];
      const env = {
        PATH: process.env.PATH ?? '',
        GATEWAY_APP_DIR: app,
        DEVSHARD_ADMIN_API_KEY: `sk-admin-${randomBytes(24).toString('hex')}`,
        DEVSHARDS_JSON: '[]',
        DATABASE_URL: db.toString(),
        REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
        REDIS_KEY_PREFIX: redisPrefix,
        DEVSHARD_PORT: String(proxyPort),
        GATEWAY_CONTROLLER_PORT: String(controllerPort),
        DEVSHARD_STORAGE_DIR: join(app, 'storage'),
      };
      const run = (program: string) => {
        const child = spawn('sh', [join(REPO_ROOT, 'deploy/image/entrypoint.sh'), program], {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        child.stdout.on('data', (d) => (text += String(d)));
        child.stderr.on('data', (d) => (text += String(d)));
        return { child, output: () => text, exited: once(child, 'exit').then(([c, s]) => c ?? s) };
      };
      const answers = (url: string) =>
        fetch(url)
          .then((r) => r.status)
          .catch(() => 0);
      const controller = run('controller');
      let proxy: ReturnType<typeof run> | undefined;
      try {
        await expect
          .poll(() => answers(`http://127.0.0.1:${controllerPort}/internal/health`), {
            timeout: 60_000,
            interval: 250,
          })
          .toBe(200);
        // As in compose: the proxies start once the controller is healthy (it creates the database).
        proxy = run('proxy');
        // The compose health check's exact request.
        await expect
          .poll(() => answers(`http://127.0.0.1:${proxyPort}/v1/status`), { timeout: 60_000, interval: 250 })
          .toBe(200);
        expect(await answers(`http://127.0.0.1:${proxyPort}/readyz`)).toBe(200);
      } catch (err) {
        throw new Error(
          `${(err as Error).message}\ncontroller:\n${controller.output()}\nproxy:\n${proxy?.output()}`,
        );
      } finally {
        proxy?.child.kill('SIGTERM');
        controller.child.kill('SIGTERM');
      }
      expect(await proxy!.exited).toBe(0);
      expect(await controller.exited).toBe(0);
      const usage = run('nonsense');
      expect(await usage.exited).toBe(64);
      expect(usage.output()).toMatch(/usage: gateway proxy\|controller\|gwctl/);
    } finally {
      rmSync(app, { recursive: true, force: true });
      rmSync(build, { recursive: true, force: true });
    }
  }, 420_000);
});
