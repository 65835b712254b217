// End-to-end test of "why the GPU idles" on the embedded sample (a synthetic trace with a planted
// DataLoader stall and a loss.item() sync): the overview's idle split and host-wait causes equal
// the CLI's sheets, the Steps tab lists the CLI's steps, and a click on a step zooms the
// timeline to that step's GPU window.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, OUT, startApp, stopApp, openApp, assertLocalOnly, cliSheet } from './harness.mjs';

before(startApp);
after(stopApp);

const SAMPLE = path.join(ROOT, 'public', 'sample_trace.json.gz');

test('the idle card and the Steps tab match the CLI, and a step opens on the timeline', async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('open-sample').click();
  await page.getByTestId('idle-split').waitFor({ timeout: 60000 });

  // Idle split: host wait + kernel wait + other = the breakdown's idle time; host wait equals
  // the sum of the CLI's host-wait causes.
  const ns = async (id) => Number(await page.getByTestId(id).getAttribute('data-ns'));
  const [host, kernel, other] = [await ns('idle-host_wait'), await ns('idle-kernel_wait'), await ns('idle-other')];
  const timeline = cliSheet(SAMPLE, 'gpu_timeline');
  const idleMs = Number(timeline.find((r) => r.type === 'idle_time')['time ms']);
  assert.ok(Math.abs((host + kernel + other) / 1e6 - idleMs) < 1e-6, `${host + kernel + other} ns vs ${idleMs} ms`);
  const causes = cliSheet(SAMPLE, 'host_wait_causes');
  const causeMs = causes.reduce((s, r) => s + Number(r.time_ms), 0);
  assert.ok(Math.abs(host / 1e6 - causeMs) < 1e-6, `host wait ${host} ns vs causes ${causeMs} ms`);
  // The causes table: the CLI's rows in the same order (largest first), the planted ones present.
  const kinds = await page.getByTestId('idle-cause').evaluateAll((rows) => rows.map((r) => r.dataset.kind));
  assert.deepEqual(kinds, causes.slice(0, 8).map((r) => r.cause));
  assert.ok(kinds.includes('data_loading') && kinds.includes('item_sync'), kinds.join(','));

  // Steps: as many rows as the CLI's sheet, in order, with the same GPU spans.
  await page.getByTestId('tab-steps').click();
  await page.getByTestId('steps-table').waitFor();
  const steps = cliSheet(SAMPLE, 'steps');
  const rows = page.getByTestId('step-row');
  assert.equal(await rows.count(), steps.length);
  // (Trace-clock nanoseconds exceed 2^53: subtract as BigInt.)
  const shown = await rows.evaluateAll((rs) => rs.map((r) => [r.cells[0].textContent, Number(BigInt(r.dataset.gpuEnd) - BigInt(r.dataset.gpuStart))]));
  steps.forEach((s, i) => {
    assert.equal(shown[i][0], s.step);
    assert.ok(Math.abs(shown[i][1] / 1e6 - Number(s.gpu_span_ms)) < 1e-6, `${s.step}: ${shown[i][1]} ns`);
  });
  await page.screenshot({ path: path.join(OUT, 'steps.png'), fullPage: true });

  // A click on the second step: the timeline opens on exactly its window.
  await rows.nth(1).click();
  const canvas = page.getByTestId('timeline');
  await canvas.waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.startNs !== undefined);
  const start = Number(await canvas.getAttribute('data-start-ns'));
  const end = Number(await canvas.getAttribute('data-end-ns'));
  // The timeline's window is f64 nanoseconds of the trace clock (~1.7e18 here: 256 ns apart).
  assert.ok(Math.abs(end - start - shown[1][1]) <= 1024, `window ${end - start} ns vs step ${shown[1][1]} ns`);
  assert.match(page.url(), /tab=timeline/);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
});
