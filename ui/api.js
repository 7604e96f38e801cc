// The dashboard's one way to call cairnd: same origin, the bearer token of the session, answers
// parsed without losing 64-bit integers, and every error turned into an ApiError that carries the
// RFC 9457 problem (title, detail, field) so the page can show it instead of swallowing it.

const TOKEN_KEY = "cairn.token";

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// JSON.rawJSON lets JSON.stringify write an integer above 2^53 with its exact digits. Where a
// browser lacks it, such integers stay decimal strings (which cairn accepts for ids) rather than
// being rounded silently.
const hasRawJson = typeof JSON.rawJSON === "function";

// A reviver that keeps integers beyond Number's exact range as BigInt (the reviver's third argument,
// the source text, is what makes that possible); everything else is left as JSON.parse made it.
function keepBigIntegers(_key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source)) {
    return hasRawJson ? BigInt(context.source) : context.source;
  }
  return value;
}

export function parseJson(text) {
  return JSON.parse(text, keepBigIntegers);
}

// JSON text of a value parsed by parseJson, BigInts written back with their exact digits.
export function toJson(value, space) {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? JSON.rawJSON(v.toString()) : v), space);
}

export class ApiError extends Error {
  constructor({ status, title, detail, field, type, method, path }) {
    super(`${title}${detail ? `: ${detail}` : ""}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.field = field;
    this.type = type;
    this.method = method;
    this.path = path;
  }
}

// Calls one route. `body` is sent as is when it is a string (an operator's edited op, whose
// digits must not pass through a Number), else as JSON. Resolves to the parsed JSON answer (or the
// text, for text answers); rejects with ApiError for a non-2xx answer or a network failure.
export async function api(method, path, body, { accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : toJson(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError({
      status: 0,
      title: "Gateway unreachable",
      detail: `${method} ${path} got no answer (${e.message})`,
      method,
      path,
    });
  }
  const text = await res.text();
  const type = res.headers.get("Content-Type") ?? "";
  if (!res.ok) {
    let problem = null;
    if (type.includes("json")) {
      try {
        problem = JSON.parse(text);
      } catch {
        problem = null;
      }
    }
    throw new ApiError({
      status: res.status,
      title: problem?.title ?? `HTTP ${res.status}`,
      detail: problem?.detail ?? (text.trim().slice(0, 300) || res.statusText),
      field: problem?.field,
      type: problem?.type,
      method,
      path,
    });
  }
  if (type.includes("json")) return parseJson(text);
  return text;
}

// The query string of the non-empty entries of an object ("" when none).
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}
