// The diagnosis in the page (issue #24): a planted-problem trace (a bf16 GEMM whose dimensions
// are one past a multiple of its kernel's tile, on MI300X) dropped on the page gets the root
// causes the CLI names, with their numbers, in its first recommendation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { OUT, JARVIS, SHARED, startApp, stopApp, openApp, assertLocalOnly, dropFile } from './harness.mjs';

before(startApp);
after(stopApp);

test('a planted GEMM problem shows its root causes in the first recommendation', async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'jarvis-e2e-')), 'gemm_odd_dims.json');
  execFileSync(JARVIS, ['synth', '--planted', 'gemm_odd_dims', '--out', file]);
  const cli = execFileSync(JARVIS, ['report', file, '--no-files'], { encoding: 'utf8' });
  // The CLI's first recommendation line: "  High     GEMM aten::mm: wave quantization: … 31.071 ms …".
  const first = cli.split('Recommendations (')[1].split('\n')[1];
  const title = first.trim().split(/\s{2,}/)[1];
  assert.match(title, /wave quantization: the last of 4 waves is 58\.2% full/);

  const { page, errors, requests } = await openApp({ width: 1440, height: 900 });
  await dropFile(page, fs.readFileSync(file), 'gemm_odd_dims.json', 'application/json');
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  assert.match(await page.getByTestId('platform').textContent(), /MI300X/);
  // The workload line: one bf16 GEMM timed in a loop, no model frames: a micro-benchmark.
  assert.equal((await page.getByTestId('workload').textContent()).trim(),
    'Workload: Micro-benchmark of aten::mm · BF16 · forward only (10 calls of one shape: ((8193, 8193), (8193, 8193)))');
  const rec = await page.getByTestId('recommendation').first().textContent();
  assert.ok(rec.includes(title), `page shows ${rec.slice(0, 200)}…, CLI ${title}`);
  for (const n of ['1089 tiles', '3.58 waves, run as 4', '8193 is one past a multiple of 256', 'AF0EM1', 'K 8193 → 8200']) {
    assert.ok(rec.includes(n), `${n} missing from the page's recommendation`);
  }
  // The impact range the CLI prints under the recommendation.
  const range = cli.split('may save ')[1].split('\n')[0];
  assert.ok(rec.includes(`Impact: may save ${range}`), `impact range ${range} missing`);
  // Trace text (the kernel name) is rendered as text inside code spans, never as markup.
  assert.equal(await page.getByTestId('recommendation').first().locator('script, img').count(), 0);
  await page.screenshot({ path: path.join(OUT, 'overview-diagnosis.png'), fullPage: false });
  // The ops table shows the GEMM's tiles, waves and alignment: 33×33 tiles of 256×256 on 304
  // CUs = 3.58 waves, the last 58% full; 8193² of 8448² useful = 94%; all three dims odd.
  await page.getByTestId('tab-ops').click();
  await page.getByTestId('ops-table').waitFor();
  const row = page.getByTestId('ops-row').filter({ hasText: 'aten::mm' }).first();
  const cells = await row.locator('.cell').allTextContents();
  assert.equal(cells[13].trim(), '1089 tiles of 256×256 · 3.58 waves (last 58%) · 94% useful');
  assert.equal(cells[14].trim(), 'M = 8193, N = 8193, K = 8193');
  await row.click();
  assert.match(await page.getByTestId('op-gemm-tiling').textContent(), /hipBLASLt\/Tensile kernel: 1089 tiles .* 33 × 33 tiles along M × N; not a multiple of 16 bytes: M = 8193/);
  await page.screenshot({ path: path.join(OUT, 'ops-gemm-tiling.png'), fullPage: false });
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('a GPU-only trace gets its kernel-level analysis: layout transposes around the convolutions', async (t) => {
  const trace = path.join(SHARED, 'traces', 'tracelens', 'mi210_gpu_only_trace.json.gz');
  if (!fs.existsSync(trace)) {
    t.skip('shared traces not present');
    return;
  }
  const cli = execFileSync(JARVIS, ['report', trace, '--no-files'], { encoding: 'utf8' });
  assert.match(cli, /Layout transposes around convolutions\s+0\.822 ms/);
  const { page, errors, requests } = await openApp({ width: 1440, height: 900 });
  await dropFile(page, fs.readFileSync(trace), 'mi210_gpu_only_trace.json.gz', 'application/gzip');
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  // No CPU ops: the workload is read from the kernels (backward kernels, bf16 names).
  assert.match((await page.getByTestId('workload').textContent()).trim(), /^Workload: CNN · BF16 · training$/);
  const recs = await page.getByTestId('recommendation').allTextContents();
  const layout = recs.find((r) => r.includes('Layout transposes around convolutions'));
  assert.ok(layout, `no layout finding among ${recs.map((r) => r.slice(0, 80)).join(' | ')}`);
  assert.ok(layout.includes('28.0% of convolution time'), layout.slice(0, 400));
  await page.screenshot({ path: path.join(OUT, 'overview-gpu-only.png'), fullPage: false });
  // The categories view has the kernel-level categories.
  await page.getByTestId('tab-categories').click();
  await page.getByTestId('category-convolution').waitFor();
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});
