// End-to-end test of the unlinked-GPU-work switch (issue #14): on a trace with GPU events that
// have no linked launch, the overview says which definition its breakdown uses and how much time
// the unlinked events hold; the switch re-analyzes the same file counting them, and both
// breakdowns equal the CLI's (`jarvis report` and `jarvis report --include-unlinked`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { QWEN, startApp, stopApp, openApp, assertLocalOnly, cliTimeline, timelineShown } from './harness.mjs';

before(startApp);
after(stopApp);

const close = (a, b) => Math.abs(a - b) < 1e-9;

test('the breakdown says what it counts, and the switch counts unlinked GPU work', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  const note = page.getByTestId('gpu-scope');
  await note.waitFor({ timeout: 60000 });
  assert.equal(await note.getAttribute('data-scope'), 'linked');
  assert.ok(Number(await note.getAttribute('data-unlinked-events')) > 0);
  assert.match(await note.textContent(), /linked to a launch \(TraceLens's default\).*left out/);
  const linked = cliTimeline(QWEN);
  let shown = await timelineShown(page);
  assert.ok(close(Number(shown['gpu-timeline-busy_time']), linked.busy_time), `${shown['gpu-timeline-busy_time']} vs ${linked.busy_time}`);

  await page.getByTestId('include-unlinked').check();
  await page.waitForSelector('[data-testid=gpu-scope][data-scope=all]', { timeout: 60000 });
  const all = cliTimeline(QWEN, ['--include-unlinked']);
  assert.ok(all.busy_time > linked.busy_time, 'the CLI counts more busy time with unlinked work');
  shown = await timelineShown(page);
  for (const [type, ms] of Object.entries(all)) {
    assert.ok(close(Number(shown[`gpu-timeline-${type}`]), ms), `${type}: page ${shown[`gpu-timeline-${type}`]} vs CLI ${ms}`);
  }
  // The note's busy figures are the two CLI breakdowns'.
  assert.ok(close(Number(await note.getAttribute('data-busy-all')) / 1e6, all.busy_time));
  assert.ok(close(Number(await note.getAttribute('data-busy-linked')) / 1e6, linked.busy_time));
  assert.ok(await page.getByTestId('include-unlinked').isChecked());
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
});
