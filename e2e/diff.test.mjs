// The Diff view (issue #26): the MI300X/H100 Qwen pair's merged call tree in the compare view,
// its times checked against the CLI's TraceDiff rows, search, sort, expand and the detail panel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { OUT, JARVIS, QWEN, startApp, stopApp, openApp, assertLocalOnly, parseCsv } from './harness.mjs';

before(startApp);
after(stopApp);

const REF = QWEN;
const TARGET = REF.replace('h100_', 'mi300xvf_');

// Sum of one source's `kernel_time` in the CLI's diff_stats.csv, in ms.
function cliKernelMs(dir, source) {
  const rows = parseCsv(fs.readFileSync(path.join(dir, 'tracediff', 'diff_stats.csv'), 'utf8'));
  return rows.filter((r) => r.source === source).reduce((a, r) => a + Number(r.kernel_time), 0) / 1e3;
}

test('the compare view shows the merged call tree with both sides\' time per node', { skip: !fs.existsSync(REF) && !process.env.CI }, async () => {
  const dir = fs.mkdtempSync(path.join(OUT, 'diff-'));
  execFileSync(JARVIS, ['compare', TARGET, REF, '--out', dir], { stdio: 'ignore' });
  const { page, errors, requests } = await openApp({ width: 1440, height: 1000 });
  await page.getByTestId('reference-input').setInputFiles(REF);
  await page.getByTestId('reference-status').getByText('reference: h100_Qwen').waitFor({ timeout: 60000 });
  await page.getByTestId('trace-input').setInputFiles(TARGET);
  await page.getByTestId('tab-compare').waitFor({ state: 'visible', timeout: 60000 });
  await page.getByTestId('tab-compare').click();
  const table = page.getByTestId('diff-table');
  await table.waitFor({ timeout: 60000 });
  const rows = page.getByTestId('diff-row');
  const roots = await rows.count();
  assert.ok(roots > 3, `${roots} rows`);
  // Cross-vendor launches never match, so every kernel under the roots is a TraceDiff row: the
  // roots' times add up to the CLI's kernel time per side.
  const sums = await page.evaluate(() => {
    let t = 0, r = 0;
    for (const tr of document.querySelectorAll('[data-testid=diff-row]')) {
      const pad = parseFloat(tr.querySelector('td').style.paddingLeft);
      if (pad > 0.5) continue; // only roots
      const cells = tr.querySelectorAll('td.num');
      r += Number(cells[0].textContent); t += Number(cells[1].textContent);
    }
    return { t, r };
  });
  assert.ok(Math.abs(sums.t - cliKernelMs(dir, 'trace1')) < roots * 0.0005 + 1e-6, `target ${sums.t} vs ${cliKernelMs(dir, 'trace1')}`);
  assert.ok(Math.abs(sums.r - cliKernelMs(dir, 'trace2')) < roots * 0.0005 + 1e-6, `reference ${sums.r} vs ${cliKernelMs(dir, 'trace2')}`);
  // Expand the first root with children, then search: matches and their ancestors only.
  await page.getByTestId('diff-toggle').first().click();
  assert.ok(await rows.count() > roots, 'expanding shows children');
  await page.getByTestId('diff-search').fill('aten::mm');
  const labels = await rows.evaluateAll((trs) => trs.map((tr) => tr.querySelector('td').textContent));
  assert.ok(labels.some((l) => l.includes('aten::mm')), 'a match is shown');
  // Sorting by |Δ|: the roots come largest delta first (the folded rest stays last).
  await page.getByTestId('diff-search').fill('');
  await page.getByTestId('diff-sort').check();
  const deltas = await page.evaluate(() => [...document.querySelectorAll('[data-testid=diff-row]')]
    .filter((tr) => parseFloat(tr.querySelector('td').style.paddingLeft) <= 0.5 && !tr.classList.contains('diff-folded'))
    .map((tr) => Math.abs(Number(tr.querySelector('[data-testid=diff-delta]').textContent))));
  assert.deepEqual(deltas, [...deltas].sort((a, b) => b - a));
  // Clicking a node lists both sides' longest kernels and opens both timelines on its GPU work.
  const refTimeline = page.getByTestId('compare-timeline-reference').locator('canvas').first();
  const targetTimeline = page.getByTestId('compare-timeline-target').locator('canvas').first();
  const before = [await refTimeline.screenshot(), await targetTimeline.screenshot()];
  await rows.first().click();
  await page.waitForTimeout(800);
  const after = [await refTimeline.screenshot(), await targetTimeline.screenshot()];
  assert.ok(!before[0].equals(after[0]), 'the reference timeline moved to the node');
  assert.ok(!before[1].equals(after[1]), 'the target timeline moved to the node');
  const detail = page.getByTestId('diff-detail');
  await detail.waitFor();
  assert.match(await detail.textContent(), /\(reference\): longest GPU work.*\(target\): longest GPU work/s);
  await table.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(OUT, 'compare-diff-tree.png') });
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});
