// SPDX-License-Identifier: MIT
// test_openapi_types: roost.js's TypeScript declarations (sdk/js/roost.d.ts) checked against
// doc/openapi.json where they overlap (issue 34). openapi-typescript turns the document into
// types; check.ts pairs them with roost.d.ts's (event, claimed event, inbox page, claim answer,
// publish request and answer, error object) and TypeScript 5 (openapi-typescript's peer; tests/js
// is on TypeScript 7, hence this package of its own) compiles it: any disagreement is a compile
// error, printed.
//   node check.mjs OPENAPI_JSON ROOST_D_TS
//   node check.mjs --self-test OPENAPI_JSON ROOST_D_TS
// The self-test changes copies of both files in ways that must fail (a field's type, a field
// made optional, a required field the declarations lack, a field the document does not have)
// and checks each fails, naming the field; it ends with "N passed, N failed".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import openapiTS, { astToString } from 'openapi-typescript';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const selfTest = args[0] === '--self-test';
if (selfTest) args.shift();
const [docPath, dtsPath] = args;
if (!docPath || !dtsPath) {
  console.error('usage: node check.mjs [--self-test] OPENAPI_JSON ROOST_D_TS');
  process.exit(2);
}

// The types of a document, generated once per document text (the self-test's cases that change
// roost.d.ts share the document's).
const generated = new Map();
async function generate(dir, doc) {
  const text = JSON.stringify(doc);
  if (!generated.has(text)) {
    const docFile = path.join(dir, 'openapi.json');
    fs.writeFileSync(docFile, text);
    // emptyObjectsUnknown: a schema {type: object} without properties (state_patch) is any JSON
    // object, as the document means it, not openapi-typescript's default Record<string, never>.
    const ast = await openapiTS(pathToFileURL(docFile), { emptyObjectsUnknown: true, silent: true });
    generated.set(text, astToString(ast));
  }
  return generated.get(text);
}

// Compiles check.ts against DOC (an object) and DTS (text); returns the diagnostics as text.
async function diagnostics(doc, dts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roost-openapi-ts-'));
  try {
    fs.writeFileSync(path.join(dir, 'openapi.d.ts'), await generate(dir, doc));
    fs.writeFileSync(path.join(dir, 'roost.d.ts'), dts);
    fs.copyFileSync(path.join(here, 'check.ts'), path.join(dir, 'check.ts'));
    const program = ts.createProgram([path.join(dir, 'check.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: [],
    });
    const diags = ts.getPreEmitDiagnostics(program);
    return ts.formatDiagnostics(diags, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => dir,
      getNewLine: () => '\n',
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));
const dts = fs.readFileSync(dtsPath, 'utf8');

if (!selfTest) {
  const out = await diagnostics(doc, dts);
  if (out) {
    console.error(out);
    console.error(`${dtsPath} disagrees with ${docPath} (tests/openapi-ts/check.ts says how)`);
    process.exit(1);
  }
  console.log(`${path.basename(dtsPath)} agrees with ${path.basename(docPath)}`);
  process.exit(0);
}

// ---- self-test ----
let passed = 0;
let failed = 0;
const ok = (cond, name, detail) => {
  if (cond) passed++;
  else failed++;
  console.log(`${cond ? 'ok' : 'FAIL'} - ${name}`);
  if (!cond && detail) console.log(detail);
};
const edit = (text, from, to) => {
  if (!text.includes(from)) throw new Error(`self-test: ${JSON.stringify(from)} not found`);
  return text.replace(from, to);
};
const clone = () => structuredClone(doc);

ok((await diagnostics(doc, dts)) === '', 'the files as they are agree');
const cases = [
  ['roost.d.ts: an event field of another type (sequence_number: string)', 'sequence_number',
    () => [doc, edit(dts, 'sequence_number: number;', 'sequence_number: string;')]],
  ['roost.d.ts: a claimed event field made optional (lease_token?)', 'lease_token',
    () => [doc, edit(dts, 'lease_token: string;', 'lease_token?: string;')]],
  ['roost.d.ts: a field the document does not have (InboxPage.cursor)', 'cursor',
    () => [doc, edit(dts, 'next_cursor: number;', 'next_cursor: number;\n  cursor: number;')]],
  ['roost.d.ts: a publish field wider than the document accepts (priority: number | string)', 'priority',
    () => [doc, edit(dts, 'priority?: number;', 'priority?: number | string;')]],
  ['document: a new required event field', 'delivered_at', () => {
    const d = clone();
    d.components.schemas.Event.properties.delivered_at = { type: 'string' };
    d.components.schemas.Event.required.push('delivered_at');
    return [d, dts];
  }],
  ['document: the error code no longer a string', 'code', () => {
    const d = clone();
    d.components.schemas.Error.properties.error.properties.code = { type: 'integer' };
    return [d, dts];
  }],
  ['document: the claim answer loses has_more', 'has_more', () => {
    const d = clone();
    const s = d.paths['/api/v1/agents/{agent}/inbox/claim'].post.responses['200'].content[
      'application/json'].schema;
    delete s.properties.has_more;
    s.required = s.required.filter((k) => k !== 'has_more');
    return [d, dts];
  }],
];
for (const [name, field, make] of cases) {
  const [d, t] = make();
  const out = await diagnostics(d, t);
  ok(out !== '' && out.includes(`"${field}"`), `${name} fails, naming "${field}"`, out || '(compiled)');
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
