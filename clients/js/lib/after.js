// Read-your-writes tokens: what a read's `after` names. A write's acknowledgement carries
// `after: "<node id>:<seq>"`, which any gateway on the same shards understands; a bare seq names a
// write of the gateway that reads. Tokens of different gateways (node ids) are not ordered.

export const NODE_ID_MAX = 1023;                 // cairn's node ids: 0 to 1023
const SEQ_MAX = (1n << 64n) - 1n;                // journal seqs are unsigned 64-bit
const TOKEN = /^(?:(\d{1,4}):)?(\d{1,20})$/;

function tokenError(what, got) {
  return new TypeError(`${what} must be a write acknowledgement, its "after" ("<node id>:<seq>", node id ` +
    `0 to ${NODE_ID_MAX}, seq a non-negative integer) or a seq, got ${typeof got === 'string' ? `"${got}"` : String(got)}`);
}

/**
 * A token's parts: "<node id>:<seq>" -> { node, seq } (seq a bigint); a bare seq -> { node: null, seq }.
 * Throws a TypeError for anything else (a node id above 1023, a negative or fractional seq, other text).
 */
export function parseAfter(text, what = 'after') {
  if (typeof text !== 'string') throw tokenError(what, text);
  const m = TOKEN.exec(text);
  if (!m) throw tokenError(what, text);
  const node = m[1] === undefined ? null : Number(m[1]);
  const seq = BigInt(m[2]);
  if ((node !== null && node > NODE_ID_MAX) || seq > SEQ_MAX) throw tokenError(what, text);
  return { node, seq };
}

/** The canonical text of parsed parts ("1:41", or "41" for a bare seq). */
function tokenText({ node, seq }) {
  return node === null ? seq.toString() : `${node}:${seq}`;
}

/**
 * The `?after=` value of a read's `after` option: an acknowledgement (its `after`, else its `seq`
 * for an acknowledgement without one), a "<node id>:<seq>" string, or a bare seq (a non-negative
 * integer number, bigint or decimal string). undefined and null: no after. Throws a TypeError
 * otherwise, before any request is made.
 */
export function afterParam(after) {
  if (after === undefined || after === null) return undefined;
  if (typeof after === 'object') {
    if (after.after !== undefined && after.after !== null) {
      // An acknowledgement of a gateway that names its node id: the token works on every gateway.
      const parts = parseAfter(after.after, 'an acknowledgement\'s after');
      if (parts.node === null) throw tokenError('an acknowledgement\'s after', after.after);
      return tokenText(parts);
    }
    if (after.seq === undefined || after.seq === null) throw tokenError('after', after);
    return afterParam(after.seq);
  }
  if (typeof after === 'string') return tokenText(parseAfter(after));
  if (typeof after === 'number') {
    if (!Number.isSafeInteger(after) || after < 0) throw tokenError('after', after);
    return String(after);
  }
  if (typeof after === 'bigint') {
    if (after < 0n || after > SEQ_MAX) throw tokenError('after', after);
    return after.toString();
  }
  throw tokenError('after', after);
}
