// Finding a Python for the Python client (lib/client-python): Debian's tools (python3-pytest,
// python3-build, python3-mypy, python3-venv) live in /usr/bin/python3's dist-packages, which an
// interpreter earlier on PATH (a pyenv shim, say) does not see. So each candidate is asked
// whether it imports what the caller needs, and /usr/bin/python3 is tried first.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Candidates in order: $PYTHON, Debian's own, then whatever PATH finds. */
export function pythonCandidates(): string[] {
  const fromEnv = process.env.PYTHON;
  return [...(fromEnv ? [fromEnv] : []), '/usr/bin/python3', 'python3', 'python3.13', 'python3.12', 'python3.11'];
}

export interface PythonChoice {
  python: string;
  version: string;
}

/**
 * The first Python 3.11+ that imports every module in `modules`, or undefined with the reasons
 * each candidate was refused (for a skip message that says what to install).
 */
export async function findPython(modules: readonly string[] = []): Promise<PythonChoice | { missing: string }> {
  const reasons: string[] = [];
  const probe = [
    'import sys',
    'assert sys.version_info >= (3, 11), "Python " + sys.version.split()[0] + " < 3.11"',
    ...modules.map((m) => `import ${m}`),
    'print(sys.version.split()[0])',
  ].join('\n');
  for (const python of [...new Set(pythonCandidates())]) {
    try {
      const { stdout } = await run(python, ['-c', probe], { timeout: 30_000 });
      return { python, version: stdout.trim() };
    } catch (err) {
      const e = err as { code?: unknown; stderr?: string };
      const why = e.code === 'ENOENT' ? 'not found' : (e.stderr ?? String(err)).trim().split('\n').at(-1);
      reasons.push(`${python}: ${why}`);
    }
  }
  return { missing: reasons.join('; ') };
}
