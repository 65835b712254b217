// Issue #14: a file handed to the page right after it loads must be analyzed, never dropped.
// The worker installs its message handler only once its wasm is instantiated; the page queues
// what it sends until the worker says `ready` (src/worker_queue.rs). Files are chosen (or
// dropped) 0, 10 and 50 ms after the load event, three times each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, startApp, stopApp, baseUrl, browserInstance, dropFile } from './harness.mjs';

before(startApp);
after(stopApp);

const SAMPLE = path.join(ROOT, 'public', 'sample_trace.json.gz');

test('a file chosen or dropped right after the page loads is analyzed', async () => {
  const bytes = fs.readFileSync(SAMPLE);
  for (const delay of [0, 10, 50]) {
    for (let rep = 0; rep < 3; rep++) {
      const page = await browserInstance().newPage({ viewport: { width: 1200, height: 900 } });
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(baseUrl() + '/');
      if (delay > 0) await page.waitForTimeout(delay);
      const how = rep === 2 ? 'drop' : 'input';
      if (how === 'drop') {
        await dropFile(page, bytes, 'sample_trace.json.gz', 'application/gzip');
      } else {
        await page.getByTestId('trace-input').setInputFiles(SAMPLE);
      }
      try {
        await page.locator('body[data-complete-ms]').waitFor({ timeout: 20000 });
      } catch {
        const status = await page.getByTestId('app-status').textContent();
        assert.fail(`${how} ${delay} ms after load (try ${rep + 1}) was not analyzed; status: ${status}`);
      }
      assert.deepEqual(errors, []);
      await page.close();
    }
  }
});
