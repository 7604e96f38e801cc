// JSON text that keeps every integer exact. cairn answers 64-bit values (ids, cell ref_keys, integer
// counter dimensions) as JSON numbers; JSON.parse would round those above 2^53. parseJson reads
// integers beyond Number.MAX_SAFE_INTEGER as bigint, and stringifyJson writes a bigint as a JSON number.

/** True when `text` holds an integer literal, outside strings, that a double cannot hold exactly. */
function hasUnsafeInteger(text) {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {  // '"': skip the string, honouring backslash escapes.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) j++;
        else break;
      }
      const token = text.slice(i, j);
      // 2^53 has 16 digits: shorter integers are always exact.
      if (token.length >= 16 && /^-?\d+$/.test(token) && !Number.isSafeInteger(Number(token))) return true;
      i = j - 1;
    }
  }
  return false;
}

class Parser {
  constructor(text) {
    this.text = text;
    this.i = 0;
  }

  fail(what) {
    throw new SyntaxError(`JSON: ${what} at offset ${this.i}`);
  }

  ws() {
    const t = this.text;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.i++;
      else break;
    }
  }

  parseDocument() {
    const v = this.value(0);
    this.ws();
    if (this.i !== this.text.length) this.fail('unexpected text after the value');
    return v;
  }

  value(depth) {
    if (depth > 512) this.fail('nesting too deep');
    this.ws();
    const t = this.text;
    const c = t[this.i];
    if (c === '{') {
      this.i++;
      const out = {};
      this.ws();
      if (t[this.i] === '}') { this.i++; return out; }
      for (;;) {
        this.ws();
        if (t[this.i] !== '"') this.fail('expected a key');
        const key = this.string();
        this.ws();
        if (t[this.i] !== ':') this.fail('expected ":"');
        this.i++;
        // defineProperty, so that a key "__proto__" is data, as JSON.parse makes it.
        Object.defineProperty(out, key, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
        this.ws();
        if (t[this.i] === ',') { this.i++; continue; }
        if (t[this.i] === '}') { this.i++; return out; }
        this.fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      this.i++;
      const out = [];
      this.ws();
      if (t[this.i] === ']') { this.i++; return out; }
      for (;;) {
        out.push(this.value(depth + 1));
        this.ws();
        if (t[this.i] === ',') { this.i++; continue; }
        if (t[this.i] === ']') { this.i++; return out; }
        this.fail('expected "," or "]"');
      }
    }
    if (c === '"') return this.string();
    if (t.startsWith('true', this.i)) { this.i += 4; return true; }
    if (t.startsWith('false', this.i)) { this.i += 5; return false; }
    if (t.startsWith('null', this.i)) { this.i += 4; return null; }
    const m = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(t);
    if (!r) this.fail('unexpected character');
    this.i = m.lastIndex;
    const token = r[0];
    if (r[1] === undefined && r[2] === undefined) {
      const n = Number(token);
      return Number.isSafeInteger(n) ? n : BigInt(token);
    }
    return Number(token);
  }

  string() {
    const t = this.text;
    const start = this.i;
    let j = start + 1;
    let escaped = false;
    for (; j < t.length; j++) {
      const d = t.charCodeAt(j);
      if (d === 0x5c) { escaped = true; j++; } else if (d === 0x22) break;
    }
    if (j >= t.length) this.fail('unterminated string');
    this.i = j + 1;
    return escaped ? JSON.parse(t.slice(start, j + 1)) : t.slice(start + 1, j);
  }
}

/**
 * Parses JSON text like JSON.parse, except that an integer outside ±(2^53 − 1) becomes a bigint
 * instead of a rounded number. Throws SyntaxError on text that is not JSON.
 */
export function parseJson(text) {
  if (!hasUnsafeInteger(text)) return JSON.parse(text);
  return new Parser(text).parseDocument();
}

/**
 * Serializes like JSON.stringify (toJSON honoured, undefined and functions skipped in objects,
 * null in arrays), except that a bigint is written as a JSON number with all its digits.
 */
export function stringifyJson(value) {
  const out = write(value, 0);
  return out === undefined ? 'null' : out;
}

function write(v, depth) {
  if (depth > 512) throw new RangeError('stringifyJson: nesting too deep (or a cycle)');
  if (v !== null && typeof v === 'object' && typeof v.toJSON === 'function') v = v.toJSON();
  switch (typeof v) {
    case 'bigint': return v.toString();
    case 'string': return JSON.stringify(v);
    case 'number': return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean': return v ? 'true' : 'false';
    case 'undefined': case 'function': case 'symbol': return undefined;
    default: break;
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) {
    return '[' + v.map((e) => write(e, depth + 1) ?? 'null').join(',') + ']';
  }
  const parts = [];
  for (const k of Object.keys(v)) {
    const s = write(v[k], depth + 1);
    if (s !== undefined) parts.push(JSON.stringify(k) + ':' + s);
  }
  return '{' + parts.join(',') + '}';
}
