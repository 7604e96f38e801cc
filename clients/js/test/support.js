// Shared pieces of the tests (not a test itself): the cairnd under test, clients with the test
// tokens of test/cairn.toml, unique names, and waiting on a condition with a deadline.
import { randomBytes } from 'node:crypto';
import { CairnClient } from '../index.js';

export const ADMIN_TOKEN = 'js-admin-token-0123456789';
export const READ_TOKEN = 'js-read-token-0123456789';

/** cairnd's URL from scripts/with-cairnd; a missing one fails the test, never skips it. */
export function cairnUrl() {
  const url = process.env.CAIRN_URL;
  if (!url) {
    throw new Error('CAIRN_URL is not set: run the tests under scripts/with-cairnd ' +
      '--toml clients/js/test/cairn.toml (see clients/js/README.md)');
  }
  return url;
}

export function cairnWsUrl() {
  cairnUrl();
  return process.env.CAIRN_WS_URL ?? `${cairnUrl().replace(/^http/, 'ws')}/v1/ws`;
}

/** A client of the cairnd under test with the admin token; options override. */
export function newClient(options = {}) {
  return new CairnClient({ url: cairnUrl(), wsUrl: cairnWsUrl(), token: ADMIN_TOKEN, ...options });
}

const run = randomBytes(4).toString('hex');

/** A graph name unique to this run (1 to 32 of A-Z a-z 0-9 _). */
export function uniqueName(prefix) {
  return `${prefix}_${run}`.slice(0, 32);
}

/** A random id below 2^50, so that ids + small offsets stay unique across runs. */
export function randomId() {
  return Math.floor(Math.random() * 2 ** 40) * 1024 + 1;
}

/** 16 random bytes as 32 hex digits (an entity id or cell row key). */
export function randomHex16() {
  return randomBytes(16).toString('hex');
}

/** The UUID text of 32 hex digits, as cairn answers row keys and entity ids. */
export function uuidText(hex) {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Resolves when check() is true, checking it each time `emitter` emits one of `events`; rejects
 * after timeoutMs with `what` in the message.
 */
export function whenTrue(emitter, events, check, what, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const listener = () => {
      if (!check()) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    function done() {
      clearTimeout(timer);
      for (const e of events) emitter.off(e, listener);
    }
    for (const e of events) emitter.on(e, listener);
    listener();
  });
}

/** Collects an async iterable into an array. */
export async function collect(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}
