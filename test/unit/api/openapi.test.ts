// functions/openapi.json documents exactly the routes the router serves (SPEC F1).
// serverless.yml's routes are checked against the same document in
// test/integration/serverless-package.test.ts (from the packaged CloudFormation).
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { routes } from '../../../lib/api/routes.js';

const doc = JSON.parse(readFileSync(new URL('../../../functions/openapi.json', import.meta.url), 'utf8')) as {
  openapi: string;
  tags?: { name: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> };
};

function documentedRoutes(): string[] {
  const methods = new Set(['get', 'post', 'put', 'patch', 'delete']);
  return Object.entries(doc.paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => methods.has(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    )
    .sort();
}

describe('OpenAPI document', () => {
  it('F1: is OpenAPI 3.1 and documents every router route, and nothing else', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(documentedRoutes()).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('F1: every operation is tagged by topic (the /docs page reads by topic, issue 34); the tags are declared', () => {
    const topics = ['sessions', 'conversations', 'compaction', 'turns', 'history'];
    const declared = (doc.tags ?? []).map((t) => t.name);
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const tags = (op as { tags?: string[] }).tags ?? [];
        expect(tags.length, `${method} ${path}`).toBeGreaterThan(0);
        for (const t of tags) {
          expect(topics, `${method} ${path}`).toContain(t);
          expect(declared, `${method} ${path}: tag ${t} declared`).toContain(t);
        }
        if (path.endsWith('/compress')) expect(tags, `${method} ${path}`).toContain('compaction');
      }
  });

  it('F1: every component schema compiles as JSON Schema 2020-12', () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`doc#/components/schemas/${name}`), name).not.toThrow();
      expect(ajv.getSchema(`doc#/components/schemas/${name}`), name).toBeTypeOf('function');
    }
  });
});
