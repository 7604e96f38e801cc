// What validate.mjs and examples.mjs share: a strict JSON Schema 2020-12 validator that knows one
// API document (so that its "#/components/..." references resolve), JSON pointers, and a walk.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// An Ajv that knows the component schemas of `doc` under `id`: compile(schemaOf(...)) resolves their
// "#/components/schemas/X" references. Strict about keywords and formats (a misspelt keyword is an
// error, not ignored); x-cairn-* annotations are known keywords that validate nothing.
export function makeAjv(doc, id) {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, strictTuples: false, strictRequired: false, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-cairn-limit', schemaType: 'string' });
  ajv.addSchema({ $id: id, $defs: rebase(doc.components?.schemas ?? {}, id) });
  ajv.schemaOf = (schema) => rebase(schema ?? {}, id);
  return ajv;
}

// schema with its local references to component schemas pointed at the schema added as `id`.
function rebase(schema, id) {
  const text = JSON.stringify(schema).replaceAll('"$ref":"#/components/schemas/', `"$ref":"${id}#/$defs/`);
  if (text.includes('"$ref":"#/')) throw new Error(`a $ref that is not to #/components/schemas/: ${text.match(/"\$ref":"#\/[^"]*"/)[0]}`);
  return JSON.parse(text);
}

// The value at a local JSON pointer ("#/a/b~1c"), or undefined.
export function resolvePointer(doc, pointer) {
  if (!pointer.startsWith('#')) return undefined;
  let node = doc;
  for (const raw of pointer.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

// Calls visit(node, path) for every object in value (arrays included), depth first.
export function walk(value, visit, path = '#') {
  if (value === null || typeof value !== 'object') return;
  if (!Array.isArray(value)) visit(value, path);
  for (const [k, v] of Object.entries(value)) walk(v, visit, `${path}/${String(k).replaceAll('~', '~0').replaceAll('/', '~1')}`);
}
