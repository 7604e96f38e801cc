// Validates docs/openapi.json (OpenAPI 3.1) and docs/asyncapi.json (AsyncAPI 3.0) with standard
// validators, then checks what schema validity does not: every $ref resolves, every schema
// compiles as JSON Schema 2020-12, every example (parameters, bodies, answers, messages) is valid
// against its own schema, every operation names its role and answers problems as problem+json,
// and path templates match their parameters. Last, it feeds the validators broken copies of both
// documents (mutants) and fails if one is accepted: a validator that accepts anything proves
// nothing. Prints one line per document and exits non-zero on any error.
//
// Usage: node validate.mjs [--openapi FILE] [--asyncapi FILE]   (defaults: ../../docs/*.json)
// Never reads stdin; needs `npm ci` in this folder first.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Validator } from '@seriousme/openapi-schema-validator';
import { Parser } from '@asyncapi/parser';

import { makeAjv, resolvePointer, walk } from './spec_lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    openapi: { type: 'string', default: resolve(here, '../../docs/openapi.json') },
    asyncapi: { type: 'string', default: resolve(here, '../../docs/asyncapi.json') },
  },
});

const ROLES = ['none', 'read', 'write', 'admin'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// ---- OpenAPI ----------------------------------------------------------------------------------

async function schemaErrorsOpenApi(doc) {
  const v = new Validator();
  const res = await v.validate(structuredClone(doc));
  if (res.valid && v.version !== '3.1') return [`validator read version ${v.version}, not 3.1`];
  if (res.valid) return [];
  const list = Array.isArray(res.errors) ? res.errors : [res.errors];
  return list.map((e) => (typeof e === 'string' ? `schema: ${e}` : `schema: ${e.instancePath ?? ''} ${e.message ?? JSON.stringify(e)}`));
}

function refErrors(doc, what) {
  const errors = [];
  walk(doc, (node, path) => {
    if (typeof node.$ref !== 'string') return;
    if (!node.$ref.startsWith('#/')) {
      errors.push(`${what} ${path}: $ref ${node.$ref} is not local`);
    } else if (resolvePointer(doc, node.$ref) === undefined) {
      errors.push(`${what} ${path}: $ref ${node.$ref} does not resolve`);
    }
  });
  return errors;
}

// Every schema of the document compiles (strict JSON Schema 2020-12), and every example is valid.
function exampleErrorsOpenApi(doc) {
  const errors = [];
  let ajv;
  try {
    ajv = makeAjv(doc, 'openapi.json');
  } catch (e) {
    return [`components.schemas: not valid JSON Schema 2020-12: ${e.message}`];
  }
  const compile = (schema, where) => {
    try {
      return ajv.compile(schema);
    } catch (e) {
      errors.push(`${where}: schema does not compile: ${e.message}`);
      return null;
    }
  };
  for (const name of Object.keys(doc.components?.schemas ?? {})) compile(ajv.schemaOf({ $ref: `#/components/schemas/${name}` }), `components.schemas.${name}`);
  const check = (schema, value, where) => {
    const validate = compile(ajv.schemaOf(schema), where);
    if (validate && !validate(value)) errors.push(`${where}: example is not valid: ${ajv.errorsText(validate.errors)}`);
  };
  const deref = (x) => (x && x.$ref ? resolvePointer(doc, x.$ref) : x);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      // A request example answered 400 is a bad request on purpose: its request is not checked.
      const refused = (name) => Object.entries(op.responses ?? {}).some(([s, r]) => s === '400' && Object.values(deref(r)?.content ?? {}).some((m) => m.examples?.[name]));
      for (const p of (op.parameters ?? []).map(deref)) {
        for (const [name, ex] of Object.entries(p.examples ?? {})) if (!refused(name)) check(p.schema, ex.value, `${where} parameter ${p.name} example ${name}`);
      }
      for (const [mt, media] of Object.entries(deref(op.requestBody)?.content ?? {})) {
        for (const [name, ex] of Object.entries(media.examples ?? {})) if (!refused(name)) check(media.schema, ex.value, `${where} body ${mt} example ${name}`);
      }
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        for (const [mt, media] of Object.entries(deref(r)?.content ?? {})) {
          for (const [name, ex] of Object.entries(media.examples ?? {})) check(media.schema, ex.value, `${where} ${status} ${mt} example ${name}`);
        }
      }
    }
  }
  return errors;
}

// The rules of this project for every operation.
function conventionErrors(doc) {
  const errors = [];
  const ids = new Set();
  const slugs = new Set(Object.keys(doc['x-cairn-problem-types'] ?? {}));
  const deref = (x) => (x && x.$ref ? resolvePointer(doc, x.$ref) : x);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.operationId) errors.push(`${where}: no operationId`);
      if (ids.has(op.operationId)) errors.push(`${where}: operationId ${op.operationId} is used twice`);
      ids.add(op.operationId);
      if (!op.summary || !op.description) errors.push(`${where}: needs a summary and a description`);
      const role = op['x-cairn-role'];
      if (!ROLES.includes(role)) errors.push(`${where}: x-cairn-role must be one of ${ROLES.join(', ')}`);
      const open = Array.isArray(op.security) && op.security.length === 0;
      if ((role === 'none') !== open) errors.push(`${where}: security must be [] exactly when x-cairn-role is none`);
      const params = (op.parameters ?? []).map(deref);
      const pathParams = params.filter((p) => p.in === 'path').map((p) => p.name);
      for (const t of templated) if (!pathParams.includes(t)) errors.push(`${where}: {${t}} has no path parameter`);
      for (const p of pathParams) if (!templated.includes(p)) errors.push(`${where}: path parameter ${p} is not in the path`);
      const statuses = Object.keys(op.responses ?? {});
      if (!statuses.some((s) => Number(s) < 400)) errors.push(`${where}: no success answer`);
      if (role !== 'none' && !(statuses.includes('401') && statuses.includes('403'))) errors.push(`${where}: a route with a role answers 401 and 403`);
      for (const s of statuses.filter((x) => Number(x) >= 400)) {
        const r = deref(op.responses[s]);
        const media = r?.content?.['application/problem+json'];
        if (!media) {
          errors.push(`${where}: ${s} is not application/problem+json`);
          continue;
        }
        const types = media.schema?.allOf?.[1]?.properties?.type?.enum ?? [];
        if (types.length === 0) errors.push(`${where}: ${s} names no problem types`);
        for (const t of types) {
          const slug = t.replace('https://cairn.dev/problems/', '');
          if (!slugs.has(slug)) errors.push(`${where}: ${s} problem type ${slug} is not in x-cairn-problem-types`);
        }
      }
      const named = new Set();
      for (const p of params) Object.keys(p.examples ?? {}).forEach((n) => named.add(n));
      for (const media of Object.values(deref(op.requestBody)?.content ?? {})) Object.keys(media.examples ?? {}).forEach((n) => named.add(n));
      for (const n of named) {
        const answered = Object.values(op.responses ?? {}).some((r) => Object.values(deref(r)?.content ?? {}).some((m) => m.examples?.[n]));
        if (!answered) errors.push(`${where}: request example ${n} has no answer example of the same name`);
      }
    }
  }
  return errors;
}

function countOperations(doc) {
  let n = 0;
  for (const item of Object.values(doc.paths ?? {})) for (const m of METHODS) if (item[m]) ++n;
  return n;
}

async function openApiErrors(doc) {
  const errors = await schemaErrorsOpenApi(doc);
  if (doc.openapi !== '3.1.0') errors.push(`openapi is ${doc.openapi}, not 3.1.0`);
  errors.push(...refErrors(doc, 'openapi'));
  if (errors.length) return errors;  // the finer checks assume a document that is valid
  errors.push(...exampleErrorsOpenApi(doc), ...conventionErrors(doc));
  return errors;
}

// ---- AsyncAPI ---------------------------------------------------------------------------------

async function asyncApiErrors(doc) {
  const errors = [];
  if (doc.asyncapi !== '3.0.0') errors.push(`asyncapi is ${doc.asyncapi}, not 3.0.0`);
  const parser = new Parser();
  const { document, diagnostics } = await parser.parse(JSON.stringify(doc));
  for (const d of diagnostics.filter((x) => x.severity === 0)) errors.push(`parser: ${d.path?.join('.') ?? ''} ${d.message}`);
  if (!document && errors.length === 0) errors.push('parser: no document');
  errors.push(...refErrors(doc, 'asyncapi'));
  if (errors.length) return errors;
  // Message examples against their payloads (JSON Schema 2020-12: the payloads use no AsyncAPI-only keyword).
  let ajv;
  try {
    ajv = makeAjv(doc, 'asyncapi.json');
  } catch (e) {
    return [`components.schemas: not valid JSON Schema 2020-12: ${e.message}`];
  }
  for (const [name, m] of Object.entries(doc.components?.messages ?? {})) {
    let validate;
    try {
      validate = ajv.compile(ajv.schemaOf(m.payload));
    } catch (e) {
      errors.push(`message ${name}: payload does not compile: ${e.message}`);
      continue;
    }
    for (const ex of m.examples ?? []) {
      if (!validate(ex.payload)) errors.push(`message ${name} example ${ex.name}: ${ajv.errorsText(validate.errors)}`);
    }
  }
  for (const [name, o] of Object.entries(doc.operations ?? {})) {
    if (o.action === 'receive' && !o.reply) errors.push(`operation ${name}: a request needs a reply (answers matched by id)`);
  }
  return errors;
}

function asyncSummary(doc) {
  return `${Object.keys(doc.channels ?? {}).length} channels, ${Object.keys(doc.operations ?? {}).length} operations, ` +
    `${Object.keys(doc.components?.messages ?? {}).length} messages`;
}

// ---- mutants: each must be refused ------------------------------------------------------------

const firstOp = (doc) => {
  for (const item of Object.values(doc.paths)) for (const m of METHODS) if (item[m]) return item[m];
  return null;
};
const openApiMutants = [
  ['no info', (d) => { delete d.info; }],
  ['a schema with a type that does not exist', (d) => { d.components.schemas.Seq.type = 'int'; }],
  ['a response without description', (d) => { const r = Object.values(firstOp(d).responses).find((x) => !x.$ref); delete r.description; }],
  ['a dangling $ref', (d) => { d.components.schemas.Edge.properties.graph = { $ref: '#/components/schemas/NoSuchSchema' }; }],
  ['a parameter in the wrong place', (d) => { firstOp(d).parameters = [{ name: 'x', in: 'body', schema: { type: 'string' } }]; }],
  ['an example that breaks its schema', (d) => {
    const ex = d.paths['/v1/graphs/{graph}/edges/{source}/{destination}'].get.responses['200'].content['application/json'].examples;
    Object.values(ex)[0].value.state = 'gone';
  }],
  ['a path parameter missing from the operation', (d) => { d.paths['/v1/graphs/{graph}/nodes/{id}'].get.parameters.splice(0, 1); }],
  ['a route without its role', (d) => { delete firstOp(d)['x-cairn-role']; }],
];
const asyncApiMutants = [
  ['no info', (d) => { delete d.info; }],
  ['an operation with an unknown action', (d) => { Object.values(d.operations)[0].action = 'publish'; }],
  ['a dangling channel $ref', (d) => { Object.values(d.operations)[0].channel = { $ref: '#/channels/nowhere' }; }],
  ['a message example that breaks its payload', (d) => { d.components.messages.request.examples[0].payload.method = 'PATCH'; }],
];

async function mutantErrors(doc, mutants, check, what) {
  const errors = [];
  for (const [name, mutate] of mutants) {
    const broken = structuredClone(doc);
    try {
      mutate(broken);
    } catch (e) {
      errors.push(`${what} mutant "${name}" could not be made (${e.message}): update validate.mjs`);
      continue;
    }
    const found = await check(broken);
    if (found.length === 0) errors.push(`${what} mutant "${name}" was accepted: the validation proves nothing`);
  }
  return errors;
}

// ---- main -------------------------------------------------------------------------------------

let failed = false;
const report = (what, errors, summary) => {
  if (errors.length) {
    failed = true;
    console.log(`${what}: INVALID, ${errors.length} error(s)`);
    for (const e of errors.slice(0, 50)) console.log(`  ${e}`);
    if (errors.length > 50) console.log(`  ... and ${errors.length - 50} more`);
  } else {
    console.log(`${what}: ${summary}`);
  }
};

const openapi = JSON.parse(readFileSync(args.openapi, 'utf8'));
const oErrors = await openApiErrors(openapi);
report('openapi', oErrors, `${openapi.openapi} valid, ${Object.keys(openapi.paths).length} paths, ${countOperations(openapi)} operations`);
if (!oErrors.length) {
  const m = await mutantErrors(openapi, openApiMutants, openApiErrors, 'openapi');
  report('openapi mutants', m, `${openApiMutants.length} broken copies refused`);
}

const asyncapi = JSON.parse(readFileSync(args.asyncapi, 'utf8'));
const aErrors = await asyncApiErrors(asyncapi);
report('asyncapi', aErrors, `${asyncapi.asyncapi} valid, ${asyncSummary(asyncapi)}`);
if (!aErrors.length) {
  const m = await mutantErrors(asyncapi, asyncApiMutants, asyncApiErrors, 'asyncapi');
  report('asyncapi mutants', m, `${asyncApiMutants.length} broken copies refused`);
}
process.exit(failed ? 1 : 0);
