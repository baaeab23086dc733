// Every relative link in README.md and docs/*.md resolves (issue 34): the file or folder exists,
// and an anchor names a heading of the markdown file it points to (GitHub's slugs).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';

const documents = [
  'README.md',
  ...readdirSync(join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slugOf(m[1]!)));
}

/** Markdown links outside code: [text](target). */
function linksOf(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('documentation links (issue 34)', () => {
  it('README.md is under 200 lines', () => {
    expect(readFileSync(join(projectRoot, 'README.md'), 'utf8').split('\n').length).toBeLessThan(200);
  });

  it('headings slug as GitHub does', () => {
    expect(slugOf('Configuration (environment, validated once by `lib/config.ts`)')).toBe(
      'configuration-environment-validated-once-by-libconfigts',
    );
    expect(slugOf('P1 against its floor')).toBe('p1-against-its-floor');
  });

  for (const doc of documents) {
    it(`every relative link in ${doc} resolves`, () => {
      const from = join(projectRoot, doc);
      const broken: string[] = [];
      for (const link of linksOf(readFileSync(from, 'utf8'))) {
        if (/^[a-z]+:/i.test(link)) continue; // http(s), mailto
        const [path = '', anchor] = link.split('#');
        const target = path === '' ? from : join(dirname(from), decodeURIComponent(path));
        if (!existsSync(target)) {
          broken.push(`${link} (no ${relative(projectRoot, target)})`);
          continue;
        }
        if (anchor && statSync(target).isFile() && target.endsWith('.md') && !anchorsOf(target).has(anchor))
          broken.push(`${link} (no heading #${anchor} in ${relative(projectRoot, target)})`);
      }
      expect(broken).toEqual([]);
    });
  }
});
