// End-to-end test of the Memory tab on a real trace with `[memory]` records (BERT-small on
// H100): the overview's peak per GPU, the curve drawn on its canvas (pixel checks on a
// screenshot), what is live at the peak against the CLI's memory/live_at_peak.csv, the range
// link with the timeline both ways, and the windowed, sortable, filterable tables.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import {
  OUT, SHARED, JARVIS, startApp, stopApp, openApp, assertLocalOnly, parseCsv,
} from './harness.mjs';
import { decodePng, near } from './png.mjs';

before(startApp);
after(stopApp);

const BERT = path.join(SHARED, 'traces', 'tracelens', 'h100_gaunernst_bert-small-uncased__1016001.json.gz');
// src/views/memory/curve.rs: allocated and reserved; the dark scheme's canvas background
// (src/theme.rs).
const ALLOCATED = [79, 179, 255];
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const RESERVED = [255, 166, 77];

/** The CLI's memory/<name>.csv files for a trace, as rows of objects. */
function cliMemory(trace, names) {
  const dir = fs.mkdtempSync(path.join(OUT, 'memory-'));
  execFileSync(JARVIS, ['report', trace, '--out', dir, '--platform', 'none'], { stdio: 'ignore' });
  const out = Object.fromEntries(names.map((n) => [n, parseCsv(fs.readFileSync(path.join(dir, 'memory', `${n}.csv`), 'utf8'))]));
  fs.rmSync(dir, { recursive: true, force: true });
  return out;
}

/** Counts the pixels of a screenshot close to `colour`. */
function pixels(img, colour) {
  let n = 0;
  for (let y = 0; y < img.height; y += 1) for (let x = 0; x < img.width; x += 1) if (near(img.pixel(x, y), colour, 12)) n += 1;
  return n;
}

/** The `tl=a_b` window of the page's URL fragment, or null. */
async function urlWindow(page) {
  const m = (await page.evaluate(() => location.hash)).match(/[#&]tl=(-?\d+)_(-?\d+)/);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

async function curveWindow(canvas) {
  return [Number(await canvas.getAttribute('data-start-ns')), Number(await canvas.getAttribute('data-end-ns'))];
}

test('the Memory tab draws the curve, lists what is live at the peak and links its range with the timeline', { skip: !fs.existsSync(BERT) && !process.env.CI }, async () => {
  const cli = cliMemory(BERT, ['peaks', 'live_at_peak']);
  const gpu = cli.peaks.find((p) => p.device === 'GPU0');
  assert.ok(gpu, 'the CLI finds a GPU0 peak');
  const live = cli.live_at_peak.filter((r) => r.device === 'GPU0').map((r) => ({ ...r, bytes: Number(r.bytes) }));
  assert.ok(live.length > 0, 'the CLI finds allocations live at the GPU0 peak');
  const top = Math.max(...live.map((r) => r.bytes));
  const topOps = live.filter((r) => r.bytes === top).map((r) => r.operator);

  // bypassCSP lets axe-core in (the page's CSP forbids inline scripts).
  const { page, errors, requests } = await openApp(undefined, { bypassCSP: true });
  await page.getByTestId('trace-input').setInputFiles(BERT);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });

  // The overview: GPU0's peaks, as the CLI's peaks.csv.
  const peak = page.getByTestId('overview-memory-GPU0');
  assert.equal(await peak.getAttribute('data-allocated'), gpu.peak_allocated_bytes);
  assert.equal(await peak.getAttribute('data-reserved'), gpu.peak_reserved_bytes);

  await page.getByTestId('tab-memory').click();
  const canvas = page.getByTestId('memory-curve');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=memory-curve]')?.dataset.endNs) > 0);
  assert.equal(await page.getByTestId('memory-device').inputValue(), String(
    await page.getByTestId('memory-device').locator('option', { hasText: 'GPU0' }).getAttribute('value')));
  const peakRow = page.locator('[data-testid=memory-peak-row][data-device=GPU0] td').nth(1);
  assert.equal(await peakRow.getAttribute('data-value'), gpu.peak_allocated_bytes);

  // The curve has drawn: both series' colours cover a fair share of the canvas.
  const img = decodePng(await canvas.screenshot());
  const [blue, orange] = [pixels(img, ALLOCATED), pixels(img, RESERVED)];
  assert.ok(blue > img.width * 0.5, `allocated: ${blue} px`);
  assert.ok(orange > img.width * 0.5, `reserved: ${orange} px`);
  await page.screenshot({ path: path.join(OUT, 'memory-dark.png'), fullPage: false });

  // A click on the peak lists what is live there, largest first: the CLI's top group first.
  const box = await canvas.boundingBox();
  const peakX = Number(await canvas.getAttribute('data-peak-x'));
  assert.ok(peakX > 0, 'the peak is marked');
  await page.mouse.click(box.x + peakX, box.y + box.height / 2);
  await page.getByTestId('memory-live').waitFor();
  const rows = page.getByTestId('memory-live-row');
  assert.equal(await rows.count(), Math.min(live.length, 200));
  const first = await page.getByTestId('memory-live-operator').first().textContent();
  assert.ok(topOps.includes(first), `top live operator ${first}, CLI: ${topOps}`);
  const shownBytes = await rows.locator('td.num[data-value]').evaluateAll((els) => els.map((e) => Number(e.dataset.value)));
  assert.deepEqual(shownBytes, [...shownBytes].sort((a, b) => b - a), 'largest first');
  assert.equal(shownBytes[0], top);

  // A range dragged on the curve zooms it and becomes the timeline's window (URL state).
  const [left, right] = [Number(await canvas.getAttribute('data-left')), Number(await canvas.getAttribute('data-right'))];
  const [w0, w1] = await curveWindow(canvas);
  const [fa, fb] = [0.3, 0.6];
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + left + fa * (right - left), y);
  await page.mouse.down();
  await page.mouse.move(box.x + left + 0.45 * (right - left), y, { steps: 4 });
  await page.mouse.move(box.x + left + fb * (right - left), y, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(() => /[#&]tl=/.test(location.hash));
  const tl = await urlWindow(page);
  const span = w1 - w0;
  assert.ok(Math.abs(tl[0] - (w0 + fa * span)) < span * 0.01, `window start ${tl[0]} vs ${w0 + fa * span}`);
  assert.ok(Math.abs(tl[1] - (w0 + fb * span)) < span * 0.01, `window end ${tl[1]} vs ${w0 + fb * span}`);
  await page.waitForFunction((a) => Number(document.querySelector('[data-testid=memory-curve]').dataset.startNs) === a, tl[0]);
  assert.deepEqual(await curveWindow(canvas), tl, 'the curve shows the range');

  // "Show in timeline": the timeline opens on that range.
  await page.getByTestId('memory-to-timeline').click();
  const timeline = page.getByTestId('timeline');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.endNs) > 0);
  const ts = Number(await timeline.getAttribute('data-start-ns'));
  const te = Number(await timeline.getAttribute('data-end-ns'));
  assert.ok(Math.abs(ts - tl[0]) <= 1 && Math.abs(te - tl[1]) <= 1, `timeline ${ts}..${te} vs ${tl}`);

  // Zooming the timeline, then opening Memory again: the curve shows the timeline's window.
  await timeline.focus();
  for (let i = 0; i < 3; i += 1) await page.keyboard.press('w');
  await page.waitForFunction((old) => {
    const m = location.hash.match(/[#&]tl=(-?\d+)_(-?\d+)/);
    return m && Number(m[2]) - Number(m[1]) < old;
  }, tl[1] - tl[0]);
  const zoomed = await urlWindow(page);
  await page.getByTestId('tab-memory').click();
  await page.waitForFunction((a) => Number(document.querySelector('[data-testid=memory-curve]')?.dataset.startNs) === a, zoomed[0]);
  assert.deepEqual(await curveWindow(page.getByTestId('memory-curve')), zoomed);
  // "Whole trace" drops the window from both.
  await page.getByTestId('memory-reset').click();
  await page.waitForFunction(() => !/[#&]tl=/.test(location.hash));

  // The tables: windowed (only the rows in view are in the DOM), sortable, filterable.
  const events = page.getByTestId('memory-events');
  const total = Number(await events.getAttribute('data-rows'));
  assert.ok(total > 0, 'events on GPU0');
  const inDom = await page.getByTestId('memory-events-row').count();
  assert.ok(inDom <= Math.min(total, 40), `${inDom} of ${total} rows in the DOM`);
  const sizes = async () => page.getByTestId('memory-events-row').evaluateAll((trs) =>
    trs.map((tr) => Number(tr.children[1].dataset.value)));
  const bySize = await sizes();
  assert.deepEqual(bySize, [...bySize].sort((a, b) => b - a), 'sorted by size, largest first');
  await page.getByTestId('memory-events-sort-1').click();
  const ascending = await sizes();
  assert.deepEqual(ascending, [...ascending].sort((a, b) => a - b), 'a second click sorts ascending');
  const name = await page.getByTestId('memory-events-row').first().locator('td').first().textContent();
  await page.getByTestId('memory-events-filter').fill(name);
  const filtered = Number(await events.getAttribute('data-rows'));
  assert.ok(filtered > 0 && filtered <= total);
  const names = await page.getByTestId('memory-events-row').evaluateAll((trs) => trs.map((tr) => tr.children[0].textContent));
  assert.ok(names.every((n) => n.toLowerCase().includes(name.toLowerCase())), 'the filter keeps its operator');
  assert.ok(Number(await page.getByTestId('memory-ops').getAttribute('data-rows')) > 0, 'statistics by operator');

  assert.deepEqual(errors, []);
  assertLocalOnly(requests);

  // The same view in the light scheme, for a look: opened from a link to the Memory tab.
  const light = await openApp({ width: 1200, height: 1000 }, { colorScheme: 'light', bypassCSP: true });
  await light.page.getByTestId('trace-input').setInputFiles(BERT);
  await light.page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  await light.page.getByTestId('tab-memory').click();
  await light.page.waitForFunction(() => Number(document.querySelector('[data-testid=memory-curve]')?.dataset.endNs) > 0);
  await light.page.getByTestId('memory-live-button').click();
  await light.page.screenshot({ path: path.join(OUT, 'memory-light.png') });
  const lightImg = decodePng(await light.page.getByTestId('memory-curve').screenshot());
  assert.ok(pixels(lightImg, [255, 255, 255]) > lightImg.width * lightImg.height * 0.5, 'the light scheme paints a white canvas');
  assert.deepEqual(light.errors, []);
  // axe-core's rules on the Memory tab, both schemes: no serious or critical violation.
  const problems = [];
  for (const [scheme, p] of [['dark', page], ['light', light.page]]) {
    await p.addScriptTag({ content: axeSource });
    const result = await p.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    problems.push(...result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${scheme}: ${v.id} (${v.impact}) ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
  }
  assert.deepEqual(problems, []);
});
