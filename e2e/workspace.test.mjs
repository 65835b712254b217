// The page as a workspace (issue #15): once a trace is loaded, a compact top bar and the active
// view filling the window, at the two window sizes people use, in both colour schemes; the
// timeline's lanes taking the height, folding and resizing; the roofline fitting; "Copy link";
// the self-contained HTML snapshot; and the axe-core accessibility checks on every view.
// Screenshots go to e2e/artifacts/workspace-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { OUT, baseUrl, startApp, stopApp, openApp, assertLocalOnly, exportFile } from './harness.mjs';

before(startApp);
after(stopApp);

const SIZES = [{ width: 1440, height: 900 }, { width: 1280, height: 720 }];
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function openSample(viewport, options = {}) {
  const opened = await openApp(viewport, options);
  await opened.page.getByTestId('open-sample').click();
  await opened.page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  return opened;
}

// Where things are on screen, in CSS pixels.
const box = (page, sel) => page.locator(sel).first().evaluate((e) => {
  const r = e.getBoundingClientRect();
  return { top: r.top, bottom: r.bottom, height: r.height, width: r.width };
});

// The colour of one canvas pixel, as [r, g, b].
const pixel = (page, testid, x, y) => page.getByTestId(testid).evaluate((c, [x, y]) => {
  const k = c.width / c.clientWidth;
  return Array.from(c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1).data.slice(0, 3));
}, [x, y]);

for (const size of SIZES) {
  for (const scheme of ['dark', 'light']) {
    test(`the workspace fills a ${size.width}x${size.height} window (${scheme})`, async () => {
      const { page, errors, requests } = await openSample(size, { colorScheme: scheme });
      const shot = (name) => page.screenshot({ path: path.join(OUT, `workspace-${size.width}x${size.height}-${scheme}-${name}.png`) });
      // A compact bar and tabs, then the view down to the window's bottom; the page itself never scrolls.
      // The overview was painted before the rest of the result arrived (or with it).
      const [first, complete] = await page.evaluate(() => [document.body.dataset.firstAnswerMs, document.body.dataset.completeMs].map(Number));
      assert.ok(first > 0 && first <= complete, `first answer ${first} ms, complete ${complete} ms`);
      const bar = await box(page, '[data-testid=topbar]');
      const tabs = await box(page, '.tabs');
      assert.ok(bar.height <= 48, `top bar ${bar.height} px high`);
      assert.ok(tabs.bottom <= 90, `tabs end at ${tabs.bottom} px`);
      const view = await box(page, '.view');
      assert.ok(Math.abs(view.bottom - size.height) <= 1, `the view ends at ${view.bottom}, the window at ${size.height}`);
      const pageScroll = () => page.evaluate(() => document.scrollingElement.scrollHeight - window.innerHeight);
      assert.ok(await pageScroll() <= 0, 'the page scrolls');
      assert.match(await page.getByTestId('trace-name').textContent(), /sample_trace\.json\.gz/);
      assert.match(await page.getByTestId('trace-size').textContent(), /\d+ (kB|MB)/);
      assert.match(await page.getByTestId('topbar-platform').textContent(), /H100/);
      // The scheme reaches the page and the canvases.
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bg, scheme === 'light' ? 'rgb(245, 247, 249)' : 'rgb(15, 20, 25)');
      await shot('overview');

      // The timeline's lanes take the height left: the canvas is as tall as its pane, which ends
      // at the window's bottom, and the rows grew past their 18 px minimum.
      await page.getByTestId('tab-timeline').click();
      const canvas = page.getByTestId('timeline');
      await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.items) > 0);
      const wrap = await box(page, '.timeline-canvas-wrap');
      const c = await box(page, '[data-testid=timeline]');
      assert.ok(wrap.bottom >= size.height - 80, `lanes end at ${wrap.bottom} of ${size.height}`);
      assert.ok(c.height >= wrap.height - 3, `canvas ${c.height} in a pane of ${wrap.height}`);
      assert.ok(Number(await canvas.getAttribute('data-row-h')) > 18, 'rows did not grow');
      assert.deepEqual(await pixel(page, 'timeline', 2, 2), scheme === 'light' ? [255, 255, 255] : [20, 27, 34]);
      assert.ok(await pageScroll() <= 0, 'the page scrolls on the timeline');
      await shot('timeline');

      // The roofline fits without scrolling, whole.
      await page.getByTestId('tab-roofline').click();
      const roof = await box(page, '[data-testid=roofline]');
      assert.ok(roof.top >= tabs.bottom && roof.bottom <= size.height, `roofline ${roof.top}-${roof.bottom} in ${size.height}`);
      assert.ok(await page.locator('.view').evaluate((v) => v.scrollHeight <= v.clientHeight + 1), 'the roofline view scrolls');
      await shot('roofline');

      // Tables scroll inside the view, the bar stays.
      await page.getByTestId('tab-report').click();
      await page.locator('.view').evaluate((v) => { v.scrollTop = v.scrollHeight; });
      assert.equal((await box(page, '[data-testid=topbar]')).top, 0);
      assert.ok(await pageScroll() <= 0, 'the page scrolls on the report');
      assert.deepEqual(errors, []);
      assertLocalOnly(requests);
      await page.close();
    });
  }
}

test('timeline lanes: host threads fold, a group edge drags to resize, Fit lanes undoes it', async () => {
  const { page, errors } = await openSample({ width: 1440, height: 900 });
  await page.getByTestId('tab-timeline').click();
  const canvas = page.getByTestId('timeline');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.items) > 0);
  const attr = async (k) => Number(await canvas.getAttribute(`data-${k}`));
  const gpuRows = await attr('rows');
  await page.getByTestId('timeline-host').check();
  await page.waitForFunction((n) => Number(document.querySelector('[data-testid=timeline]').dataset.rows) > n, gpuRows);
  const unfolded = await attr('rows');
  await page.getByTestId('timeline-fold').click();
  const folded = await attr('rows');
  assert.ok(folded < unfolded, `folding kept ${folded} of ${unfolded} rows`);
  await page.getByTestId('timeline-fold').click();
  assert.equal(await attr('rows'), unfolded);
  // Drag the GPU group's lower edge 60 px down in the label gutter: its rows grow.
  const before = await attr('row-h');
  const edge = await attr('gpu-edge');
  const c = await canvas.boundingBox();
  await page.mouse.move(c.x + 40, c.y + edge);
  await page.mouse.down();
  await page.mouse.move(c.x + 40, c.y + edge + 30, { steps: 3 });
  await page.mouse.move(c.x + 40, c.y + edge + 60, { steps: 3 });
  await page.mouse.up();
  const after = await attr('row-h');
  assert.ok(after > before + 5, `row height ${before} -> ${after}`);
  assert.ok(Math.abs(await attr('gpu-edge') - (edge + 60)) <= 2, 'the edge follows the pointer');
  await page.screenshot({ path: path.join(OUT, 'workspace-timeline-host-lanes.png') });
  await page.getByTestId('timeline-fit').click();
  assert.equal(await attr('row-h'), before);
  assert.deepEqual(errors, []);
  await page.close();
});

test('Copy link puts the view state in the clipboard, and the link reopens that view', async () => {
  const { page, errors } = await openSample({ width: 1280, height: 720 }, { permissions: ['clipboard-read', 'clipboard-write'] });
  await page.getByTestId('tab-ops').click();
  await page.getByTestId('copy-link').click();
  await page.getByTestId('copy-link-status').getByText('Link copied').waitFor();
  const link = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(link, page.url());
  assert.ok(link.startsWith(baseUrl()) && link.includes('tab=ops'), link);
  // A colleague opens the link and loads the same trace: the same view.
  const other = (await openApp({ width: 1280, height: 720 })).page;
  await other.goto(link);
  await other.getByTestId('open-sample').click();
  await other.getByTestId('ops-table').waitFor({ timeout: 30000 });
  assert.equal(await other.locator('[role=tab].active').getAttribute('data-testid'), 'tab-ops');
  assert.deepEqual(errors, []);
  await other.close();
  await page.close();
});

test('the HTML snapshot holds the overview, top ops, charts and report, and opens offline', async () => {
  const { page, errors, requests } = await openSample({ width: 1440, height: 900 });
  const { name, bytes } = await exportFile(page, 'export-snapshot');
  assert.equal(name, 'jarvis_snapshot.html');
  const doc = bytes.toString('utf8');
  assert.match(doc, /default-src 'none'; img-src data:/);
  assert.doesNotMatch(doc, /<script/);
  assert.equal((doc.match(/<img src="data:image\/png;base64,/g) || []).length, 2, 'breakdown and roofline images');
  // The figures are the page's.
  const util = await page.getByTestId('headline-gpu_utilization_pct').textContent();
  assert.ok(doc.includes(`<tr><td>GPU utilization</td><td class="num">${util.trim()}</td></tr>`), util);
  const total = await page.getByTestId('gpu-timeline-total_time').textContent();
  assert.ok(doc.includes(`<tr><td>total_time</td><td class="num">${total.trim()}</td>`), total);
  const firstOp = (await page.getByTestId('top-ops').locator('tbody tr').first().locator('td').nth(1).textContent()).trim();
  assert.ok(doc.includes(`<code>${firstOp}</code>`), firstOp);
  assert.ok(doc.includes(page.url().replaceAll('&', '&amp;')), 'the link to the view');
  // Opened from disk with nothing else: no request leaves the file.
  const file = path.join(OUT, 'snapshot.html');
  fs.writeFileSync(file, bytes);
  const snap = (await openApp({ width: 1280, height: 720 })).page;
  const seen = [];
  snap.on('request', (r) => seen.push(r.url()));
  await snap.goto('file://' + file);
  assert.deepEqual(seen.filter((u) => !u.startsWith('file://') && !u.startsWith('data:')), []);
  const shown = await snap.locator('img').evaluateAll((imgs) => imgs.map((i) => i.naturalWidth));
  assert.ok(shown.length === 2 && shown.every((w) => w > 0), `images ${shown}`);
  await snap.screenshot({ path: path.join(OUT, 'workspace-snapshot.png'), fullPage: false });
  await snap.close();
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

// axe-core's rules (WCAG 2.x A/AA and best practices) on the landing page and on every view of a
// loaded trace, in both schemes: no serious or critical violation.
test('axe-core finds no serious accessibility violation on the landing page or any view', async () => {
  const problems = [];
  for (const scheme of ['dark', 'light']) {
    // The page's CSP forbids inline scripts: the test context lets axe in.
    const { page, errors } = await openApp({ width: 1440, height: 900 }, { colorScheme: scheme, bypassCSP: true });
    const check = async (where) => {
      await page.addScriptTag({ content: axeSource });
      const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
      const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      problems.push(...bad.map((v) => `${where} (${scheme}): ${v.id} (${v.impact}) ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
    };
    await check('landing');
    await page.getByTestId('open-sample').click();
    await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
    const tabs = await page.locator('[role=tab]:not(.hidden)').evaluateAll((ts) => ts.map((t) => t.dataset.testid));
    for (const tab of tabs) {
      await page.getByTestId(tab).click();
      await page.waitForTimeout(100);
      await check(tab);
    }
    await page.getByTestId('export-menu').locator('summary').click();
    await check('export menu');
    await page.keyboard.press('Escape');
    await page.getByTestId('help-open').click();
    await check('shortcuts overlay');
    assert.deepEqual(errors, []);
    await page.close();
  }
  assert.deepEqual(problems, []);
});
