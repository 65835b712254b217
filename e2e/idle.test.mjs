// End-to-end test of "why the GPU idles" on the embedded sample (a synthetic trace with a planted
// DataLoader stall and a loss.item() sync): the overview's idle split and host-wait causes equal
// the CLI's sheets, the Steps tab lists the CLI's steps, and a click on a step zooms the
// timeline to that step's GPU window. A trace of many steps: the Steps table is windowed and
// still shows every step where it belongs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, OUT, JARVIS, startApp, stopApp, openApp, assertLocalOnly, cliSheet } from './harness.mjs';

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

test('a trace of many steps: the Steps table holds only the rows in view, each where it belongs', async () => {
  const trace = path.join(OUT, 'steps-150.json');
  if (!fs.existsSync(trace)) execFileSync(JARVIS, ['synth', '--out', trace, '--steps', '150'], { stdio: 'ignore' });
  const steps = cliSheet(trace, 'steps');
  const { page, errors } = await openApp({ width: 1280, height: 720 });
  await page.getByTestId('trace-input').setInputFiles(trace);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 120000 });
  await page.getByTestId('tab-steps').click();
  const table = page.getByTestId('steps-table');
  await table.waitFor();
  assert.equal(Number(await table.getAttribute('data-rows')), steps.length);
  const rows = page.getByTestId('step-row');
  const inDom = await rows.count();
  assert.ok(inDom < steps.length && inDom >= 720 / 28, `${inDom} of ${steps.length} rows in the DOM`);
  // Every row is exactly the height the window is computed with.
  const heights = await rows.evaluateAll((rs) => rs.map((r) => r.getBoundingClientRect().height));
  assert.ok(heights.every((h) => Math.abs(h - 28) < 0.01), heights.join(','));
  // Scrolled anywhere, every row in the DOM sits where its step belongs (index × 28 px from
  // the top of the table body) and the rows cover the scroller's whole height.
  const scroller = page.getByTestId('steps-scroll');
  const index = new Map(steps.map((st, i) => [st.step, i]));
  for (const target of [40, 97, steps.length - 1]) {
    const g = await scroller.evaluate((el, t) => {
      el.scrollTop = t * 28;
      return new Promise((resolve) => setTimeout(() => {
        const box = el.getBoundingClientRect();
        const body = el.querySelector('tbody').getBoundingClientRect().top;
        const rows = [...el.querySelectorAll('[data-testid=step-row]')].map((r) => {
          const b = r.getBoundingClientRect();
          return [r.cells[0].textContent, b.top - body, b.top, b.bottom];
        });
        resolve({ top: box.top, bottom: box.bottom, rows, scrolled: el.scrollTop, max: el.scrollHeight - el.clientHeight });
      }, 100));
    }, target);
    // The offset stays where it was put (scroll anchoring once ran the window away to the end).
    assert.ok(Math.abs(g.scrolled - Math.min(target * 28, g.max)) <= 1, `scrollTop ${g.scrolled} for row ${target}`);
    for (const [name, y] of g.rows) assert.ok(Math.abs(y - index.get(name) * 28) < 0.5, `${name} at ${y} px (row ${target})`);
    const first = g.rows[0];
    const last = g.rows[g.rows.length - 1];
    assert.ok(first[2] <= g.top || index.get(first[0]) === 0, `rows start below the scroller's top (row ${target})`);
    assert.ok(last[3] >= g.bottom || index.get(last[0]) === steps.length - 1, `rows end above the scroller's bottom (row ${target})`);
  }
  // The last step is in the DOM once scrolled to the end.
  assert.equal(await rows.last().evaluate((r) => r.cells[0].textContent), steps[steps.length - 1].step);
  assert.deepEqual(errors, []);
  await page.close();
});
