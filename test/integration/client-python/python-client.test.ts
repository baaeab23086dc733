// The Python client (lib/client-python, issue 31) as a user installs it: the wheel built with
// `python -m build --no-isolation --wheel` from a scratch copy of the package (the repository stays
// clean), installed into a fresh venv (--system-site-packages, for pytest and mypy only), checked
// with `mypy --strict`, then its pytest suite and its example agent against the HTTP API under
// serverless-offline on free ports (test/support/local-service.ts). Any failure fails this file.
//
// Skipped, saying why, where no Python 3.11+ with pytest, build, mypy, setuptools and venv exists
// (.ci/run installs them: python3-pytest python3-build python3-mypy python3-venv python3-setuptools).
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { findPython } from '../../../infra/local/python.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

const run = promisify(execFile);
const PACKAGE_DIR = join(projectRoot, 'lib', 'client-python');
const BUILD_LEFTOVERS = /(^|\/)(build|dist|[^/]*\.egg-info|__pycache__|\.mypy_cache|\.pytest_cache)$/;
const MINUTES = 60_000;

const found = await findPython(['pytest', 'build', 'mypy', 'setuptools', 'venv', 'ensurepip']);
const missing = 'missing' in found ? found.missing : undefined;

/** Runs a command; a non-zero exit throws with its output, so the failing Python test is in the vitest report. */
async function sh(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}) {
  try {
    return await run(cmd, args, {
      cwd: opts.cwd ?? projectRoot,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...opts.env },
      timeout: opts.timeoutMs ?? 5 * MINUTES,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`.slice(-20_000));
  }
}

describe.skipIf(missing !== undefined)('the Python client session-lineage, built and installed as a wheel', () => {
  let service: LocalService | undefined;
  let work = '';
  let venvPython = '';
  let env: Record<string, string> = {};
  const python = 'python' in found ? found.python : '';

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'session-lineage-python-'));
    const pkg = join(work, 'pkg');
    cpSync(PACKAGE_DIR, pkg, { recursive: true, filter: (src) => !BUILD_LEFTOVERS.test(src) });
    const [started] = await Promise.all([
      // No after-turn consumer: its compactions would meet the tests' held attempts as `locked`.
      startLocalService({ afterTurn: false }),
      (async () => {
        await sh(python, ['-m', 'build', '--no-isolation', '--wheel', '--outdir', join(work, 'dist'), pkg]);
        await sh(python, ['-m', 'venv', '--system-site-packages', join(work, 'venv')]);
        venvPython = join(work, 'venv', 'bin', 'python');
        const wheel = readdirSync(join(work, 'dist')).find((f) => f.endsWith('.whl'));
        if (!wheel) throw new Error('python -m build made no wheel');
        await sh(venvPython, ['-m', 'pip', 'install', '--no-index', '--no-deps', '--quiet', join(work, 'dist', wheel)]);
      })(),
    ]);
    service = started;
    const [key, other] = await Promise.all([service.createApiKey('python-client'), service.createApiKey('python-client-other')]);
    env = { LINEAGE_BASE_URL: service.baseUrl, LINEAGE_API_KEY: key, LINEAGE_API_KEY_OTHER: other, LINEAGE_EXPECT_INSTALLED: '1' };
  }, 10 * MINUTES);

  afterAll(async () => {
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(
    'type-checks with mypy --strict (the installed package, then the example and the tests against it)',
    async () => {
      // One cache (in the scratch folder) across the three runs: the standard library is analysed once.
      for (const target of [['-p', 'session_lineage'], [join(work, 'pkg', 'examples', 'agent.py')], [join(work, 'pkg', 'tests')]]) {
        const { stdout } = await sh(venvPython, ['-m', 'mypy', '--strict', ...target], {
          cwd: work,
          env: { MYPYPATH: join(work, 'pkg', 'tests') },
        });
        expect(stdout).toContain('Success: no issues found');
      }
    },
    5 * MINUTES,
  );

  it(
    'passes its pytest suite against the local service (every route, retries, errors, L5, held compactions, LineageSession)',
    async () => {
      const { stdout } = await sh(venvPython, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', join(work, 'pkg', 'tests')], {
        cwd: work,
        env,
        timeoutMs: 8 * MINUTES,
      });
      console.log(stdout.split('\n').slice(-25).join('\n'));
      expect(stdout).toMatch(/\d+ passed/);
    },
    10 * MINUTES,
  );

  it(
    'runs the example agent (examples/agent.py) from the installed wheel',
    async () => {
      const { stdout } = await sh(venvPython, [join(work, 'pkg', 'examples', 'agent.py')], { cwd: work, env });
      expect(stdout).toContain('example agent passed');
    },
    5 * MINUTES,
  );
});

if (missing !== undefined) {
  describe('the Python client session-lineage', () => {
    it.skip(`skipped: no Python 3.11+ with pytest, build, mypy, setuptools and venv (${missing}); .ci/run installs python3-pytest python3-build python3-mypy python3-venv python3-setuptools`, () => {});
  });
}
