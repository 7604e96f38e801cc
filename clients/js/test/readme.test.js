// The example at the top of README.md runs as written, and prints what its `// ->` comment says.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { ADMIN_TOKEN, cairnUrl } from './support.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const squash = (s) => s.replace(/\s+/g, ' ').trim();

test('the README example runs and prints what it says', async () => {
  const url = cairnUrl();
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const block = /```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'README.md has a ```js block');
  const code = block[1];
  assert.ok(code.trim().split('\n').length <= 5, 'the example is at most five lines');
  const expected = /\/\/ -> (.*)$/m.exec(code);
  assert.ok(expected, 'the example says what it prints (// -> ...)');
  // Run from the package's folder, so that `import '@cairn/client'` resolves to this package.
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', code], {
      cwd: root, timeout: 30_000, env: { ...process.env, CAIRN_URL: url, CAIRN_TOKEN: ADMIN_TOKEN },
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  assert.equal(squash(out), squash(expected[1]));
});
