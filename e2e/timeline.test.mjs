// End-to-end test of the timeline view on a real trace: the canvas draws (pixel checks on a
// screenshot), zoom and pan move the visible range by the amounts defined in
// crates/engine/src/lanes/viewport.rs, and a click on a kernel selects its launching op.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  OUT, QWEN, baseUrl, startApp, stopApp, openApp, assertLocalOnly, cliTimeline, cliSheet,
} from './harness.mjs';
import { decodePng, near, countRow } from './png.mjs';

before(startApp);
after(stopApp);

// src/views/timeline/{layout,paint}.rs: gutter width, row tops, class colours.
const GUTTER = 210;
// Rows grow to fill the view (src/views/timeline/layout.rs): the middle of the busy row and of
// the first stream row follow the row height the canvas reports (ruler 26 px, lane gap 6 px).
let BUSY_Y = 26 + 9;
let STREAM_Y = 26 + 18 + 6 + 9;
let ROW_TOP = 26 + 18 + 6;
async function rowsOf(canvas) {
  const h = Number(await canvas.getAttribute('data-row-h'));
  BUSY_Y = Math.round(26 + h / 2);
  ROW_TOP = 26 + h + 6;
  STREAM_Y = Math.round(ROW_TOP + h / 2);
}
const COLOURS = { computation: [0x3a, 0x9d, 0x5d], idle: [0xf2, 0xb8, 0xb5], hostWait: [0xff, 0x6b, 0x6b], kernelWait: [0xc9, 0xa7, 0xa4], gemm: [0x4f, 0x8f, 0xe6], background: [0x14, 0x1b, 0x22] };

async function frames(page) {
  return Number(await page.getByTestId('timeline').getAttribute('data-frames'));
}

// Waits until a frame after `n` has been painted for the current window.
async function nextFrame(page, n) {
  await page.waitForFunction((k) => Number(document.querySelector('[data-testid=timeline]').dataset.frames) > k, n);
}

async function span(page) {
  const c = page.getByTestId('timeline');
  return Number(await c.getAttribute('data-end-ns')) - Number(await c.getAttribute('data-start-ns'));
}

// Counts the pixels of row `y` (between the gutter and the right edge) matching `colour`.
function count(img, y, colour) {
  return countRow(img, y, GUTTER + 2, img.width - 2, (p) => near(p, colour));
}

test('the timeline draws the GPU lanes, zooms and pans, and a click selects the launching op', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  const breakdown = cliTimeline(QWEN);
  await page.getByTestId('tab-timeline').click();
  const canvas = page.getByTestId('timeline');
  await nextFrame(page, 0);
  await rowsOf(canvas);

  // The screenshot: the busy lane is computation green over most of its width, with idle gaps
  // coloured by idle category (the trace has idle time); the stream row holds kernels.
  const img = decodePng(await canvas.screenshot());
  const plot = img.width - GUTTER - 4;
  const green = count(img, BUSY_Y, COLOURS.computation);
  assert.ok(green > plot * 0.3, `computation covers ${green} of ${plot} px`);
  assert.ok(breakdown.idle_time > 0);
  // Idle gaps are coloured by category (host wait, kernel wait, other).
  const idlePx = count(img, BUSY_Y, COLOURS.idle) + count(img, BUSY_Y, COLOURS.hostWait) + count(img, BUSY_Y, COLOURS.kernelWait);
  assert.ok(idlePx > 0, 'idle gaps are drawn');
  const painted = plot - count(img, STREAM_Y, COLOURS.background);
  assert.ok(painted > plot * 0.5, `stream row: ${painted} of ${plot} px painted`);
  // The range label starts with the whole trace: the CLI's total time plus the 1 % margins.
  const whole = await span(page);
  const traceMs = Number((await page.getByTestId('timeline-range').textContent()).match(/of ([\d.]+) ms/)[1]);
  assert.ok(traceMs >= breakdown.total_time - 1e-3, `${traceMs} ms shown vs GPU span ${breakdown.total_time} ms`);
  assert.ok(Math.abs(whole / 1e6 - traceMs * 1.02) < 2e-3, `${whole} ns`);

  // Keys: five W presses zoom to 0.8^5 of the span; the label follows.
  const label = await page.getByTestId('timeline-range').textContent();
  await canvas.focus();
  let n = await frames(page);
  for (let i = 0; i < 5; i += 1) await page.keyboard.press('w');
  await nextFrame(page, n);
  assert.ok(Math.abs((await span(page)) / whole - 0.8 ** 5) < 1e-6);
  assert.notEqual(await page.getByTestId('timeline-range').textContent(), label);
  // The wheel zooms in at the pointer; dragging pans by the distance dragged.
  const box = await canvas.boundingBox();
  const before = await span(page);
  n = await frames(page);
  await page.mouse.move(box.x + GUTTER + 300, box.y + STREAM_Y);
  await page.mouse.wheel(0, -200);
  await nextFrame(page, n);
  const wheeled = await span(page);
  assert.ok(wheeled < before * 0.9, `${wheeled} vs ${before}`);
  const start0 = Number(await canvas.getAttribute('data-start-ns'));
  n = await frames(page);
  await page.mouse.down();
  await page.mouse.move(box.x + GUTTER + 200, box.y + STREAM_Y, { steps: 5 });
  await page.mouse.up();
  await nextFrame(page, n);
  const moved = Number(await canvas.getAttribute('data-start-ns')) - start0;
  const nsPerPx = wheeled / (box.width - GUTTER);
  assert.ok(Math.abs(moved - 100 * nsPerPx) < 2 * nsPerPx, `dragged ${moved} ns, expected ${100 * nsPerPx}`);
  // Once the view rests, its window is in the URL (ns from the trace start).
  await page.waitForFunction(() => /[#&]tl=-?\d+_\d+/.test(location.hash));
  const link = page.url();
  const linkedRange = await page.getByTestId('timeline-range').textContent();
  // 0 returns to the whole trace.
  n = await frames(page);
  await page.keyboard.press('0');
  await nextFrame(page, n);
  assert.equal(await span(page), whole);

  // Zoomed into the middle until kernels are boxes, a click on a GEMM kernel selects it and its
  // launching op, an aten GEMM of the unified summary; the op is selected in the URL.
  for (let i = 0; i < 18; i += 1) {
    n = await frames(page);
    await page.getByTestId('timeline-zoom-in').click();
    await nextFrame(page, n);
  }
  const zoomed = decodePng(await canvas.screenshot());
  let gemmX = -1;
  for (let x = GUTTER + 2; x < zoomed.width - 2 && gemmX < 0; x += 1) if (near(zoomed.pixel(x, STREAM_Y), COLOURS.gemm)) gemmX = x;
  assert.ok(gemmX > 0, 'a GEMM kernel is drawn in the middle of the trace');
  await page.screenshot({ path: path.join(OUT, 'timeline-qwen-zoomed.png'), fullPage: true });
  await page.mouse.click(box.x + gemmX + 1, box.y + STREAM_Y);
  const selection = page.getByTestId('timeline-selection');
  await selection.waitFor();
  assert.match(await selection.textContent(), /GEMM/);
  const op = (await page.getByTestId('timeline-op').textContent()).trim();
  const unified = cliSheet(QWEN, 'unified_perf_summary');
  assert.ok(unified.some((r) => r.name === op), `${op} is a unified row`);
  assert.match(op, /mm|linear|matmul/);
  assert.match(page.url(), /tab=timeline.*sel=\d+/);
  // The selected op's kernels are marked (a white strip at the top of the stream row).
  const sel = new URL(page.url()).hash.match(/sel=(\d+)/)[1];
  await page.waitForFunction((s) => document.querySelector('[data-testid=timeline]').dataset.highlight === s, sel);
  n = await frames(page);
  await page.keyboard.press('0');
  await nextFrame(page, n);
  const marked = decodePng(await canvas.screenshot());
  // (Row 2 of the 4 px strip: below the selection outline's top edge, whose sides add at most 4 px.)
  const strip = count(marked, ROW_TOP + 3, [255, 255, 255]);
  assert.ok(strip > 8, `the selected op is marked over ${strip} px`);
  await page.screenshot({ path: path.join(OUT, 'timeline-qwen-whole.png'), fullPage: true });
  // Host lanes on demand make the canvas taller.
  const height = (await canvas.boundingBox()).height;
  n = await frames(page);
  await page.getByTestId('timeline-host').check();
  await nextFrame(page, n);
  assert.ok((await canvas.boundingBox()).height > height + 18);
  await page.screenshot({ path: path.join(OUT, 'timeline-qwen.png'), fullPage: true });
  // The op opens in the ops view with its call stack.
  await page.getByTestId('timeline-open-op').click();
  await page.getByTestId('call-stack').waitFor();
  assert.match(await page.getByTestId('call-stack').textContent(), /nn\.Module: Qwen2/);
  // And back: the ops view sends the selected op to the timeline, marked.
  await page.getByTestId('ops-show-timeline').click();
  await page.waitForFunction((s) => document.querySelector('[data-testid=timeline]')?.dataset.highlight === s, sel);

  // The link, reloaded with the same trace, shows the same window.
  await page.goto(`${baseUrl()}/${new URL(link).hash}`);
  await page.reload();
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 30000 });
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.getByTestId('timeline').waitFor({ timeout: 60000 });
  await nextFrame(page, 0);
  assert.equal(await page.getByTestId('timeline-range').textContent(), linkedRange);

  assertLocalOnly(requests);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the timeline opened again on the same window paints its last frame at once, then the worker\'s equal one', async () => {
  const { page, errors } = await openApp();
  await page.getByTestId('open-sample').click();
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  await page.getByTestId('tab-timeline').click();
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.frames) >= 1);
  const items = Number(await page.getByTestId('timeline').getAttribute('data-items'));
  assert.ok(items > 0);
  await page.getByTestId('tab-overview').click();
  await page.getByTestId('gpu-timeline').waitFor();
  // Right after the click, before the page can take any message from the worker (messages are
  // tasks; the view is built and painted in microtasks): the canvas already shows the slices.
  const early = await page.evaluate(async () => {
    document.querySelector('[data-testid=tab-timeline]').click();
    for (let i = 0; i < 200; i += 1) await Promise.resolve();
    const c = document.querySelector('[data-testid=timeline]');
    return c && [c.dataset.items ?? null, c.dataset.frames ?? null];
  });
  assert.deepEqual(early, [String(items), null]);
  // The worker's frame, when it comes, draws the same.
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.frames) >= 1);
  assert.equal(Number(await page.getByTestId('timeline').getAttribute('data-items')), items);
  assert.deepEqual(errors, []);
  await page.close();
});
