// End-to-end tests of the web app (harness.mjs serves ../dist and drives Debian's Chromium).
// Screenshots go to e2e/artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  OUT, JARVIS, QWEN, SHARED, ROOT, baseUrl, startApp, stopApp, openApp, assertLocalOnly, cliTimeline, cliSheet,
  parseCsv, timelineShown, dropFile, exportFile,
} from './harness.mjs';
import { decodePng, near, countRow } from './png.mjs';

before(startApp);
after(stopApp);

test('a real trace by file input matches the CLI to the nanosecond', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  const expected = cliTimeline(QWEN);
  for (const [type, ms] of Object.entries(expected)) {
    const shown = Number(await page.getByTestId(`gpu-timeline-${type}`).getAttribute('data-value'));
    assert.equal(shown, ms, `${type}: page ${shown} vs CLI ${ms}`);
  }
  // The executive summary's utilization is busy / total of the same timeline (docs/metrics.md).
  const util = Number(await page.getByTestId('headline-gpu_utilization_pct').getAttribute('data-value'));
  const want = expected.busy_time / expected.total_time * 100;
  assert.ok(Math.abs(util - want) <= 1e-9 * want, `utilization ${util} vs ${want}`);
  // Kernel time with FLOPs computed never exceeds kernel time with a perf model.
  const share = async (k) => Number(await page.getByTestId(`headline-${k}`).getAttribute('data-value'));
  const [modelled, computed] = [await share('modelled_share_pct'), await share('computed_share_pct')];
  assert.ok(computed > 0 && computed <= modelled, `computed ${computed} vs modelled ${modelled}`);
  const top = await page.getByTestId('top-ops').textContent();
  assert.match(top, /aten::mul/);
  assert.match(await page.getByTestId('platform').textContent(), /H100 SXM/);
  // The standalone report: the unfused RMSNorm the engine tests find, and every
  // "See Detailed Analysis" link lands on a heading of the page.
  await page.screenshot({ path: path.join(OUT, 'overview-qwen.png'), fullPage: true });
  await page.getByTestId('tab-report').click();
  const report = page.getByTestId('report');
  assert.match(await report.textContent(), /Unfused module Qwen2RMSNorm/);
  const dangling = await page.evaluate(() => [...document.querySelectorAll('[data-testid=report] a')]
    .map((a) => a.getAttribute('href'))
    .filter((h) => !h.startsWith('#') || !document.getElementById(h.slice(1))));
  assert.deepEqual(dangling, []);
  await report.locator('h2').nth(1).scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(OUT, 'report-qwen.png') });
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('a reference trace gives a comparison with the expected hardware ratios', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  const target = QWEN.replace('h100_', 'mi300xvf_');
  await page.getByTestId('reference-input').setInputFiles(QWEN);
  await page.getByTestId('reference-status').getByText('reference: h100_Qwen').waitFor({ timeout: 60000 });
  await page.getByTestId('trace-input').setInputFiles(target);
  await page.getByTestId('tab-compare').waitFor({ state: 'visible', timeout: 60000 });
  await page.getByTestId('tab-compare').click();
  const comparison = page.getByTestId('comparison');
  await comparison.waitFor({ timeout: 60000 });
  const text = await comparison.textContent();
  assert.match(text, /Performance Comparison: h100_sxm vs mi300x/);
  assert.match(text, /Recommendations for mi300x/);
  assert.match(text, /Expected\?/);
  // The same comparison as the CLI's: its fair report names the same first recommendation.
  const dir = fs.mkdtempSync(path.join(OUT, 'cmp-'));
  execFileSync(JARVIS, ['compare', target, QWEN, '--out', dir], { stdio: 'ignore' });
  const cli = fs.readFileSync(path.join(dir, 'comparative_analysis_fair.md'), 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  const first = cli.split('\n').find((l) => l.startsWith('### ') && l.includes('Priority 1:'));
  const op = first.match(/`([^`]+)`/)[1];
  const pageFirst = await comparison.locator('h3').filter({ hasText: 'Priority 1:' }).textContent();
  assert.ok(pageFirst.includes(op), `${pageFirst} vs CLI ${first}`);
  const { name: zipName, bytes: zip } = await exportFile(page, 'export-comparison');
  assert.equal(zipName, 'jarvis_comparison.zip');
  for (const entry of ['comparative_analysis_fair.md', 'tracelens_compare_csvs/GEMM_intersect_mi300x.csv', 'comparison_csvs/ops_matched.csv']) {
    assert.ok(zip.includes(Buffer.from(entry)), `${entry} missing from the comparison zip`);
  }
  // The compare view's table: the matched ops, and the timelines side by side.
  const matchedRows = await page.getByTestId('compare-row').count();
  assert.ok(matchedRows > 10, `${matchedRows} matched rows`);
  const csvDir = fs.mkdtempSync(path.join(OUT, 'cmpcsv-'));
  execFileSync(JARVIS, ['compare', target, QWEN, '--out', csvDir], { stdio: 'ignore' });
  const matchedCsv = parseCsv(fs.readFileSync(path.join(csvDir, 'comparison_csvs', 'ops_matched.csv'), 'utf8'));
  fs.rmSync(csvDir, { recursive: true, force: true });
  assert.equal(matchedRows, matchedCsv.length);
  const tl = cliTimeline(target);
  assert.equal(Number(await page.getByTestId('compare-timeline-total').textContent()), Number(tl.total_time.toFixed(3)));
  // The two breakdown bars share one scale: their painted lengths are in the ratio of the totals
  // (pixel check on a screenshot of each; the canvas background is the dark theme's #141b22).
  const painted = async (id) => {
    const img = decodePng(await page.getByTestId(id).screenshot());
    return countRow(img, Math.floor(img.height / 2), 0, img.width, (p) => !near(p, [20, 27, 34], 4)) / img.width;
  };
  const refTl = cliTimeline(QWEN);
  const [refLen, targetLen] = [await painted('compare-bar-reference'), await painted('compare-bar-target')];
  const longer = Math.max(refTl.total_time, tl.total_time);
  assert.ok(Math.abs(refLen - refTl.total_time / longer) < 0.01, `reference bar ${refLen}`);
  assert.ok(Math.abs(targetLen - tl.total_time / longer) < 0.01, `target bar ${targetLen}`);
  // Both GPU timelines are drawn, each from its own trace's lanes: the busy lane (row 26-44 px)
  // and the first stream (50-68 px) are painted on both canvases.
  for (const side of ['reference', 'target']) {
    const canvas = page.getByTestId(`compare-timeline-${side}`).getByTestId('timeline');
    await page.waitForFunction((s) => Number(document.querySelector(`[data-testid=compare-timeline-${s}] canvas`).dataset.frames) >= 1, side);
    const img = decodePng(await canvas.screenshot());
    for (const y of [35, 59]) {
      const painted = countRow(img, y, 212, img.width - 2, (p) => !near(p, [0x14, 0x1b, 0x22], 4));
      assert.ok(painted > (img.width - 214) * 0.3, `${side} row at ${y} px: ${painted} painted px`);
    }
  }
  const spans = await page.locator('[data-testid^=compare-timeline-] canvas').evaluateAll((cs) => cs.map((c) => Number(c.dataset.endNs) - Number(c.dataset.startNs)));
  assert.notEqual(spans[0], spans[1], 'each timeline spans its own trace');
  await page.screenshot({ path: path.join(OUT, 'compare-qwen.png'), fullPage: true });
  await comparison.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(OUT, 'comparison-qwen.png') });
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('the embedded sample opens, and a synthetic drop works', async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('open-sample').click();
  await page.getByTestId('gpu-timeline-computation_time').waitFor({ timeout: 30000 });
  assert.match(await page.getByTestId('top-ops').textContent(), /aten::mm/);
  // The prioritized recommendations are the CLI's, in its order.
  const cli = execFileSync(JARVIS, ['report', path.join(ROOT, 'public', 'sample_trace.json.gz'), '--no-files'], { encoding: 'utf8' });
  const block = cli.split('Recommendations (')[1].split('\n\n')[0].split('\n').slice(1);
  const listed = block.filter((l) => /^  (Critical|High|Medium|Low) /.test(l))
    .map((l) => [l.trim().split(/\s+/)[0], Number(l.match(/([0-9.]+) ms/)[1])]);
  // The CLI's "… N more" line (an action's text may say "more" too).
  const more = Number((block.find((l) => /^\s*… \d+ more/.test(l)) || '0').match(/(\d+) more/)?.[1] ?? 0);
  const rows = page.getByTestId('recommendation');
  assert.equal(await rows.count(), listed.length + more);
  for (const [i, [prio, ms]] of listed.entries()) {
    const row = rows.nth(i);
    assert.equal((await row.locator('.prio').textContent()).trim(), prio, `row ${i + 1}`);
    assert.equal(Number((await row.locator('td[data-value]').textContent()).trim()), ms, `row ${i + 1}`);
  }
  assert.match(await rows.nth(0).textContent(), /Path A:.*Path B:/s);
  // What the CLI lists aside (no perf model and no cause), the page names under the table.
  const guessed = block.find((l) => l.startsWith('  no perf model and no cause'));
  if (guessed) {
    const aside = await page.getByTestId('recommendations-aside').textContent();
    for (const name of guessed.split(': ').slice(1).join(': ').split(/, (?=[A-Za-z`])/).map((x) => x.replace(/ \([0-9.]+ ms\)$/, ''))) {
      assert.ok(aside.includes(name), `${name} missing from ${aside}`);
    }
  }
  await dropFile(page, fs.readFileSync(path.join(ROOT, 'public', 'sample_trace.json.gz')), 'dropped.json.gz', 'application/gzip');
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  await page.screenshot({ path: path.join(OUT, 'overview-sample.png'), fullPage: true });
  // Every view opens (the comparison tab only exists with a reference trace).
  assert.equal(await page.getByTestId('tab-compare').isVisible(), false);
  for (const [tab, id] of [['report', 'report'], ['rough', 'report-rough'], ['categories', 'categories'], ['ops', 'ops-table'],
    ['kernels', 'kernels-table'], ['steps', 'steps-table'], ['roofline', 'roofline'], ['diagnostics', 'diagnostics-view'], ['overview', 'gpu-timeline']]) {
    await page.getByTestId(`tab-${tab}`).click();
    await page.getByTestId(id).waitFor({ timeout: 10000 });
  }
  await page.getByTestId('tab-rough').click();
  assert.match(await page.getByTestId('report-rough').textContent(), /Tree Analysis/);
  // The Report tab also shows analysis.md in TraceLens's agent's format: the CLI's P1 card.
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'jarvis-agent-'));
  execFileSync(JARVIS, ['report', path.join(ROOT, 'public', 'sample_trace.json.gz'), '--out', outDir]);
  const analysisMd = fs.readFileSync(path.join(outDir, 'analysis.md'), 'utf8');
  const p1 = analysisMd.split('\n').find((l) => l.startsWith('### 🔴 P1:')).slice(4).replaceAll('`', '');
  await page.getByTestId('tab-report').click();
  await page.getByTestId('report-show-agent').click();
  const agentText = await page.getByTestId('report-agent').textContent();
  for (const h of ['Executive Summary', 'Compute Kernel Optimizations', 'Kernel Fusion Opportunities (Experimental)', 'System-Level Optimizations', 'Detailed Analysis', 'Appendix']) {
    assert.ok(agentText.includes(h), `${h} missing from the agent report`);
  }
  assert.ok(agentText.includes(p1), `page lacks the CLI's ${p1}`);
  await page.screenshot({ path: path.join(OUT, 'report-agent.png'), fullPage: false });
  await page.getByTestId('report-show-fair').click();
  await page.getByTestId('report').waitFor();
  await page.getByTestId('tab-overview').click();
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('while the page waits for a file the worker warms up, unseen, and the file is then its own', async () => {
  const { page, errors, requests } = await openApp();
  // The worker analyzes its synthetic warm-up trace in steps the page asks for while Ready.
  await page.locator('body[data-worker-warm-ms]').waitFor({ timeout: 60000 });
  assert.ok(Number(await page.locator('body').getAttribute('data-worker-warm-ms')) > 0);
  // The page rendered the warm-up's overview off screen only: nothing of it is in the document.
  await page.getByTestId('app-status').getByText('Ready').waitFor();
  for (const id of ['overview', 'recommendation', 'gpu-timeline', 'analysis-cost']) {
    assert.equal(await page.getByTestId(id).count(), 0, id);
  }
  // A file after the warm-up shows its own figures (the CLI's), not the warm-up trace's.
  const sample = path.join(ROOT, 'public', 'sample_trace.json.gz');
  await page.getByTestId('trace-input').setInputFiles(sample);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  for (const [type, ms] of Object.entries(cliTimeline(sample))) {
    assert.equal(Number(await page.getByTestId(`gpu-timeline-${type}`).getAttribute('data-value')), ms, type);
  }
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('a malformed file shows the error panel and nothing half-rendered', async () => {
  const { page, errors } = await openApp();
  await page.getByTestId('trace-input').setInputFiles({ name: 'page.json', mimeType: 'text/html', buffer: Buffer.from('<html>404</html>') });
  const panel = page.getByTestId('error-panel');
  await panel.waitFor({ timeout: 30000 });
  assert.match(await panel.textContent(), /HTML/);
  assert.equal(await page.getByTestId('overview').count(), 0);
  await page.screenshot({ path: path.join(OUT, 'error-panel.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a kernel name with markup is shown as text', async () => {
  const { page, errors } = await openApp();
  const evil = '<img src=x onerror=alert(1)>';
  const trace = { traceEvents: [
    { ph: 'X', cat: 'cpu_op', name: evil, pid: 1, tid: 1, ts: 0, dur: 10 },
    { ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: 1, tid: 1, ts: 1, dur: 2, args: { correlation: 5 } },
    { ph: 's', cat: 'ac2g', id: 5, pid: 1, tid: 1, ts: 1 },
    { ph: 'f', cat: 'ac2g', id: 5, pid: 0, tid: 7, ts: 4 },
    { ph: 'X', cat: 'kernel', name: 'k', pid: 0, tid: 7, ts: 4, dur: 5, args: { correlation: 5, stream: 7 } },
  ] };
  await page.getByTestId('trace-input').setInputFiles({ name: 'evil.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(trace)) });
  await page.getByTestId('top-ops').waitFor({ timeout: 30000 });
  assert.match(await page.getByTestId('top-ops').textContent(), /<img src=x onerror=alert\(1\)>/);
  assert.equal(await page.locator('img').count(), 0);
  // Its trace-quality summary links to the full list (no device name: no platform).
  assert.match(await page.getByTestId('diagnostics-summary').textContent(), /\d+ diagnostics?:/);
  await page.getByTestId('diagnostics-all').click();
  assert.match(await page.getByTestId('diagnostics').textContent(), /unknown_platform/);
  assert.equal(await page.locator('img').count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('exports: the bundle, the workbook, the report and the analysis files download', async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('open-sample').click();
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  const save = (id) => exportFile(page, id);
  const bundle = await save('export-bundle');
  assert.equal(bundle.name, 'jarvis_bundle.zip');
  assert.ok(bundle.bytes.subarray(0, 2).equals(Buffer.from('PK')));
  for (const entry of ['perf_report_csvs/gpu_timeline.csv', 'perf_report_csvs/unified_perf_summary.csv', 'jarvis.json',
    'standalone_analysis_fair.md', 'standalone_analysis_rough.md', 'category_manifest.json', 'category_findings/gemm_findings.md']) {
    assert.ok(bundle.bytes.includes(Buffer.from(entry)), `${entry} missing from the bundle`);
  }
  const xlsx = await save('export-xlsx');
  assert.equal(xlsx.name, 'perf_report.xlsx');
  assert.ok(xlsx.bytes.includes(Buffer.from('xl/workbook.xml')));
  const html = await save('export-html');
  assert.equal(html.name, 'standalone_analysis_fair.html');
  const doc = html.bytes.toString('utf8');
  assert.match(doc, /^<!DOCTYPE html>/);
  assert.match(doc, /default-src 'none'/);
  // Titled with the model the trace names (the seeds' <Model>), the trace's name below it.
  assert.match(doc, /Transformer - H100 SXM Standalone Analysis/);
  assert.match(doc, /Trace <code>sample_trace<\/code>/);
  assert.doesNotMatch(doc, /<script|src=/);
  const files = await save('export-analysis');
  assert.equal(files.name, 'jarvis_analysis.zip');
  for (const entry of ['standalone_analysis_fair.md', 'standalone_analysis_rough.md', 'category_manifest.json', 'category_findings/gemm_findings.md', 'category_data/gemm_tree_data.json',
    'analysis.md', 'priority_data.json', 'perf_improvement.png', 'category_data/category_manifest.json', 'system_findings/cpu_idle_findings.md', 'metadata/model_info.json']) {
    assert.ok(files.bytes.includes(Buffer.from(entry)), `${entry} missing from the analysis zip`);
  }
  // Dropping the bundle back reopens the same views without the trace.
  const before = await timelineShown(page);
  const report = await page.getByTestId('tab-report').click().then(() => page.getByTestId('report').textContent());
  await page.getByTestId('tab-overview').click();
  await dropFile(page, bundle.bytes, 'jarvis_bundle.zip', 'application/zip');
  await page.getByText('Reopened from a bundle:').waitFor({ timeout: 30000 });
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  assert.deepEqual(await timelineShown(page), before);
  assert.match(await page.getByTestId('top-ops').textContent(), /aten::mm/);
  await page.getByTestId('tab-report').click();
  assert.equal(await page.getByTestId('report').textContent(), report);
  await page.getByTestId('tab-overview').click();
  await page.screenshot({ path: path.join(OUT, 'reopened-bundle.png'), fullPage: true });
  // Its exports still work: the workbook comes from the bundle's CSVs.
  assert.ok((await save('export-xlsx')).bytes.includes(Buffer.from('xl/workbook.xml')));
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('choosing a platform and editing its peaks re-analyzes like the CLI with that platform', async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('open-sample').click();
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  assert.match(await page.getByTestId('platform').textContent(), /H100 SXM \(auto-detected/);
  const sample = path.join(ROOT, 'public', 'sample_trace.json.gz');
  const cliRoofline = (platform) => {
    const out = execFileSync(JARVIS, ['report', sample, '--no-files', '--platform', platform], { encoding: 'utf8' });
    return Number(out.match(/([0-9.]+) ms at roofline/)[1]);
  };
  const shownIdeal = async () => Number(await page.getByTestId('headline-roofline_ideal_ms').getAttribute('data-value'));
  await page.getByTestId('platform-select').selectOption('MI300X');
  await page.getByTestId('platform').getByText('MI300X (given)').waitFor({ timeout: 30000 });
  // The result's second part rebuilds the overview; the panel keeps what the user opened and
  // typed (views/platform.rs), but the steps below run on the complete result.
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  assert.ok(Math.abs(await shownIdeal() - cliRoofline('MI300X')) < 0.0005);
  // Edited peaks: the same figures as the CLI given the edited platform as a JSON file.
  await page.locator('details.peaks summary').click();
  await page.getByTestId('platform-peak-hbm_tbps').fill('1');
  await page.getByTestId('platform-peak-matrix_bf16').fill('100');
  // A view switch rebuilds the overview (as the result's second part does): the open panel and
  // the typed peaks come back as they were.
  await page.getByTestId('tab-report').click();
  await page.getByTestId('tab-overview').click();
  assert.equal(await page.locator('details.peaks').evaluate((d) => d.open), true);
  assert.equal(await page.getByTestId('platform-peak-hbm_tbps').inputValue(), '1');
  assert.equal(await page.getByTestId('platform-peak-matrix_bf16').inputValue(), '100');
  await page.screenshot({ path: path.join(OUT, 'platform-peaks.png'), fullPage: true });
  await page.getByTestId('platform-apply').click();
  await page.getByTestId('platform').getByText('MI300X (edited)').waitFor({ timeout: 30000 });
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  const table = JSON.parse(fs.readFileSync(path.join(ROOT, 'crates/engine/src/perf/platforms.json'), 'utf8'));
  const mi = structuredClone(table.platforms.find((p) => p.name === 'MI300X'));
  Object.assign(mi, { name: 'MI300X (edited)', match: [], exclude: [], hbm_tbps: [1, 'custom'] });
  mi.tflops.matrix_bf16 = [100, 'custom'];
  const file = path.join(OUT, 'edited-platform.json');
  fs.writeFileSync(file, JSON.stringify(mi));
  assert.ok(Math.abs(await shownIdeal() - cliRoofline(file)) < 0.0005);
  // The edited peaks took effect: the figures differ from MI300X's own (which rows beat the
  // slower roofline, and are left out of it, changes with the peaks too).
  assert.ok(Math.abs(await shownIdeal() - cliRoofline('MI300X')) > 0.0005);
  await page.getByTestId('tab-report').click();
  assert.match(await page.getByTestId('report').textContent(), /MI300X \(edited\)/);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('cancel stops a long load and the page takes the next file', async () => {
  const big = path.join(OUT, 'cancel-synth.json');
  execFileSync(JARVIS, ['synth', '--out', big, '--steps', '1000'], { stdio: 'ignore' });
  const { page, errors } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(big);
  await page.getByTestId('progress').waitFor({ timeout: 30000 });
  // The workspace comes with the file: its bar names the file while the progress shows, and the
  // tabs keep their place, hidden until there is a result.
  assert.equal(await page.getByTestId('trace-name').textContent(), 'cancel-synth.json');
  assert.equal(await page.locator('nav.tabs').evaluate((n) => getComputedStyle(n).visibility), 'hidden');
  await page.getByTestId('cancel').click();
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 30000 });
  assert.equal(await page.getByTestId('overview').count(), 0);
  fs.rmSync(big, { force: true });
  await page.getByTestId('open-sample').click();
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('the ops, kernels, categories and roofline views against the CLI', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  const unified = cliSheet(QWEN, 'unified_perf_summary');
  await page.getByTestId('tab-ops').click();
  const table = page.getByTestId('ops-table');
  await table.waitFor();
  assert.equal(await page.getByTestId('ops-count').textContent(), `${unified.length} of ${unified.length} rows`);
  // Virtualized: only the rows in view (20 of 26 px in a 520 px viewport) and 16 more are in the DOM.
  assert.equal(await page.getByTestId('ops-row').count(), Math.min(unified.length, 36));
  const cell = async (i, col) => (await page.getByTestId('ops-row').nth(i).locator('.cell').nth(col).textContent()).trim();
  // Default order: kernel time, largest first (the CLI's first row).
  const maxMs = Math.max(...unified.map((r) => Number(r['Kernel Time (µs)_sum']))) / 1e3;
  assert.equal(Number(await cell(0, 3)), Number(maxMs.toFixed(3)));
  // Sort by count: the largest operation_count first; again: smallest first.
  await page.getByTestId('ops-sort-count').click();
  const counts = unified.map((r) => Number(r.operation_count));
  assert.equal(Number(await cell(0, 2)), Math.max(...counts));
  await page.getByTestId('ops-sort-count').click();
  assert.equal(Number(await cell(0, 2)), Math.min(...counts));
  // Filter by name: as many rows as the CLI's sheet has for that op.
  await page.getByTestId('ops-filter').fill('aten::mm');
  const mm = unified.filter((r) => r.name.toLowerCase().includes('aten::mm') || r['Input Dims'].toLowerCase().includes('aten::mm'));
  assert.equal(await page.getByTestId('ops-count').textContent(), `${mm.length} of ${unified.length} rows`);
  const names = await page.getByTestId('ops-row').locator('.cell:first-child').allTextContents();
  assert.ok(names.length > 0 && names.every((n) => n.includes('aten::mm')), names.join(', '));
  // The call stack of a GEMM reaches its nn.Module parents.
  await page.getByTestId('ops-sort-kernel_ms').click();
  await page.getByTestId('ops-row').first().click();
  const stack = page.getByTestId('call-stack');
  await stack.waitFor();
  assert.match(await stack.textContent(), /nn\.Module: Qwen2/);
  await page.screenshot({ path: path.join(OUT, 'ops-qwen.png'), fullPage: true });
  // Scrolling the full table brings later rows into the DOM.
  await page.getByTestId('ops-filter').fill('');
  const firstBefore = await cell(0, 0);
  await page.locator('.ops-scroll').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await page.waitForFunction((first) => document.querySelector('[data-testid=ops-row] .cell')?.textContent !== first, firstBefore);
  // Kernels: TraceLens's kernel_summary, largest total first.
  const kernels = cliSheet(QWEN, 'kernel_summary');
  await page.getByTestId('tab-kernels').click();
  await page.getByTestId('kernels-table').waitFor();
  assert.equal(await page.getByTestId('kernels-row').count(), kernels.length);
  const firstTotal = Number((await page.getByTestId('kernels-row').first().locator('td').nth(4).textContent()).trim());
  const maxTotal = Math.max(...kernels.map((r) => Number(r['Kernel duration (µs)_sum'])));
  assert.ok(Math.abs(firstTotal - maxTotal) < 0.0005, `${firstTotal} vs ${maxTotal}`);
  await page.getByTestId('kernels-filter').fill('gemm');
  const gemm = kernels.filter((r) => `${r['Kernel name']} ${r['Parent cpu_op']}`.toLowerCase().includes('gemm')).length;
  assert.ok(gemm > 0);
  assert.equal(await page.getByTestId('kernels-row').count(), gemm);
  await page.screenshot({ path: path.join(OUT, 'kernels-qwen.png'), fullPage: true });
  // Categories: one section per category the CLI writes findings for, with the CLI's share.
  const dir = fs.mkdtempSync(path.join(OUT, 'cats-'));
  execFileSync(JARVIS, ['report', QWEN, '--out', dir], { stdio: 'ignore' });
  const cats = fs.readdirSync(path.join(dir, 'category_findings')).map((f) => f.replace('_findings.md', ''));
  await page.getByTestId('tab-categories').click();
  await page.getByTestId('categories').waitFor();
  assert.equal(await page.locator('details.category').count(), cats.length);
  for (const key of cats) {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'metadata', `${key}_metadata.json`), 'utf8'));
    const shown = Number(await page.getByTestId(`category-${key}`).locator('summary [data-value]').getAttribute('data-value'));
    assert.ok(Math.abs(shown - meta.config.pct_of_compute) <= 1e-9 * Math.max(1, shown), `${key}: ${shown} vs ${meta.config.pct_of_compute}`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  assert.match(await page.getByTestId('category-gemm').textContent(), /Path A/);
  await page.screenshot({ path: path.join(OUT, 'categories-qwen.png'), fullPage: true });
  // Roofline: one point per modelled row, drawn; hovering names an op, clicking opens it.
  const modelled = unified.filter((r) => Number(r['FLOPS/Byte']) > 0 && Number(r['TFLOPS/s_mean']) > 0).length;
  await page.getByTestId('tab-roofline').click();
  const canvas = page.getByTestId('roofline');
  await canvas.waitFor();
  assert.ok(modelled > 0);
  assert.equal(Number(await canvas.getAttribute('data-points')), modelled);
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=roofline-point]')?.dataset.x) > 0);
  const painted = await canvas.evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    for (let i = 0; i < d.length; i += 4 * 97) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return colours.size;
  });
  assert.ok(painted > 20, `only ${painted} colours on the roofline canvas`);
  const pt = page.getByTestId('roofline-point').first();
  const [px, py, opName] = [Number(await pt.getAttribute('data-x')), Number(await pt.getAttribute('data-y')), (await pt.locator('td').first().textContent()).trim()];
  const box = await canvas.boundingBox();
  const scale = box.width / Number(await canvas.getAttribute('width'));
  await page.mouse.move(box.x + px * scale, box.y + py * scale);
  await page.getByTestId('roofline-tip').waitFor();
  await page.screenshot({ path: path.join(OUT, 'roofline-qwen.png'), fullPage: true });
  await page.mouse.click(box.x + px * scale, box.y + py * scale);
  await page.getByTestId('call-stack').waitFor();
  assert.equal((await page.getByTestId('call-stack').locator('h3').textContent()).trim(), opName);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('view state lives in the URL: back/forward and a reload with the same trace restore it', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const { page, errors, requests } = await openApp();
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  await page.getByTestId('tab-ops').click();
  await page.getByTestId('ops-sort-count').click();
  await page.getByTestId('ops-filter').fill('mm');
  await page.getByTestId('ops-row').first().click();
  const opName = (await page.getByTestId('call-stack').locator('h3').textContent()).trim();
  const hash = new URL(page.url()).hash;
  for (const part of ['#v1&', 'tab=ops', 'sort=count', 'q=mm', 'sel=']) assert.ok(hash.includes(part), `${part} missing from ${hash}`);
  // A tab change is a history entry; back returns to the ops view with its filter.
  await page.getByTestId('tab-kernels').click();
  assert.ok(new URL(page.url()).hash.includes('tab=kernels'));
  await page.goBack();
  await page.getByTestId('ops-table').waitFor();
  assert.equal(await page.getByTestId('ops-filter').inputValue(), 'mm');
  // A reload of the link, then the same trace: the same view and the same op open.
  await page.goto(`${baseUrl()}/${hash}`);
  await page.reload();
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 30000 });
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.getByTestId('ops-table').waitFor({ timeout: 60000 });
  assert.equal(await page.getByTestId('ops-filter').inputValue(), 'mm');
  assert.equal((await page.getByTestId('call-stack').locator('h3').textContent()).trim(), opName);
  assert.match(await page.getByTestId('ops-sort-count').textContent(), /▼|▲/);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});
