// A second cairnd the tests start and stop themselves (not a test itself): on the shards and database
// of the cairnd under test (scripts/with-cairnd's CAIRN_CONFIG), with a node id of its own, a journal
// in a temporary folder, and extra [journal] settings (retention_seconds = 0, say). stop() sends
// SIGTERM and waits for the exit; start() again reuses the journal and the port, as a restart does.
// The binary is $CAIRN_BUILD_DIR/apps/cairnd (scripts/test exports it), else build/ci/apps/cairnd.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function cairndPath() {
  const build = process.env.CAIRN_BUILD_DIR ?? join(repo, 'build', 'ci');
  const path = join(build, 'apps', 'cairnd');
  if (!existsSync(path)) throw new Error(`${path} not found: set CAIRN_BUILD_DIR to cairnd's build folder`);
  return path;
}

export class Gateway {
  /** nodeId: unused on the database (1 to 1023); journal: lines added to [journal]. */
  constructor({ nodeId, journal = [] }) {
    this.nodeId = nodeId;
    this.journalLines = journal;
    this.port = 0;
    this.child = null;
    this.dir = null;
    this.log = '';
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  get wsUrl() {
    return `ws://127.0.0.1:${this.port}/v1/ws`;
  }

  async config_() {
    const base = process.env.CAIRN_CONFIG;
    if (!base) throw new Error('CAIRN_CONFIG is not set: run the tests under scripts/with-cairnd');
    this.dir = await mkdtemp(join(tmpdir(), 'cairn-js-gateway-'));
    let text = await readFile(base, 'utf8');
    if (!/^node_id = \d+$/m.test(text) || !/^\[journal\]\npath = ".*"$/m.test(text)) {
      throw new Error(`${base} does not look like scripts/with-cairnd's config (node_id, [journal] path)`);
    }
    text = text.replace(/^node_id = \d+$/m, `node_id = ${this.nodeId}`);
    text = text.replace(/^\[journal\]\npath = ".*"$/m,
      [`[journal]`, `path = ${JSON.stringify(join(this.dir, 'journal'))}`, ...this.journalLines].join('\n'));
    const path = join(this.dir, 'cairn.toml');
    await writeFile(path, text);
    return path;
  }

  /** Starts cairnd (the first time on a free port, then on the same one); resolves once it listens. */
  async start() {
    const config = this.dir === null ? await this.config_() : join(this.dir, 'cairn.toml');
    const args = ['--config', config];
    if (this.port !== 0) args.push('--port', String(this.port));
    const child = spawn(cairndPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    running.add(child);
    child.on('exit', () => running.delete(child));
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('did not listen within 30 s')), 30_000);
      const onData = (d) => {
        this.log += d;
        const m = /cairnd listening on [^ ]*:(\d+) /.exec(this.log);
        if (m) {
          clearTimeout(timer);
          this.port = Number(m[1]);
          resolve();
        }
      };
      const onExit = (code) => fail(new Error(`exited with ${code} before it listened`));
      const fail = (e) => {
        clearTimeout(timer);
        reject(new Error(`cairnd (node id ${this.nodeId}): ${e.message}`));
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', onExit);
      child.once('error', (e) => fail(e));
    }).catch((e) => {
      throw new Error(`${e.message}\n${this.log.slice(-3000)}`);
    });
    child.removeAllListeners('exit');
    child.on('exit', () => running.delete(child));
  }

  /** SIGTERM, and the exit code once it exited (SIGKILL after 30 s). */
  stop() {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null) return Promise.resolve(child?.exitCode ?? 0);
    return new Promise((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(code ?? signal);
      });
      child.kill('SIGTERM');
    });
  }

  /** Stops it and removes its journal. */
  async close() {
    await this.stop();
    if (this.dir !== null) await rm(this.dir, { recursive: true, force: true });
  }
}
