// Graph-mode inference in the page (issue #27): a vLLM decode step replayed as one HIP graph,
// dropped together with the trace that captured the graph (and TraceLens's
// execution_details.json), is analyzed as one: the pool tells the capture trace from a rank by
// its content, the main worker merges it, and the page shows GEMM, attention and MoE with their
// efficiency, the same figures as `jarvis report --capture`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { OUT, JARVIS, SHARED, startApp, stopApp, openApp, assertLocalOnly, exportFile } from './harness.mjs';

before(startApp);
after(stopApp);

const CASE = path.join(SHARED, 'traces', 'tracelens_inference', 'vllm_decode_full');

/** One entry of a zip (found through the central directory, so data descriptors do not matter). */
function zipEntry(bytes, name) {
  for (let at = bytes.indexOf('PK\x01\x02'); at >= 0; at = bytes.indexOf('PK\x01\x02', at + 4)) {
    const len = bytes.readUInt16LE(at + 28);
    if (bytes.toString('utf8', at + 46, at + 46 + len) !== name) continue;
    const [method, size, local] = [bytes.readUInt16LE(at + 10), bytes.readUInt32LE(at + 20), bytes.readUInt32LE(at + 42)];
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    const data = bytes.subarray(start, start + size);
    return (method === 8 ? zlib.inflateRawSync(data) : data).toString('utf8');
  }
  return null;
}

test('a vLLM serving trace dropped with its graph capture is merged and shows GEMM, attention and MoE with efficiency', async (t) => {
  const exec = path.join(CASE, 'graph_execution.json.gz');
  if (!fs.existsSync(exec)) {
    t.skip('shared inference traces not present');
    return;
  }
  const dir = path.join(CASE, 'capture_traces');
  const captures = fs.readdirSync(dir).map((f) => path.join(dir, f));
  // What the CLI says with the same platform: each category's efficiency and the first finding.
  const out = fs.mkdtempSync(path.join(OUT, 'inference-'));
  const cli = execFileSync(JARVIS, ['report', exec, '--capture', dir, '--platform', 'MI300X', '--out', out], { encoding: 'utf8' });
  const efficiency = Object.fromEntries(['gemm', 'sdpa_fwd', 'moe_fused'].map((key) =>
    [key, JSON.parse(fs.readFileSync(path.join(out, 'metadata', `${key}_metadata.json`), 'utf8')).config.efficiency_pct]));
  const first = cli.split('Recommendations (')[1].split('\n')[1].trim().split(/\s{2,}/)[1];
  // The MoE down stage, 2.3× slower per byte than its up stage under the same routing, leads.
  assert.match(first, /moe_triton_unfused_down: down stage at 0\.97 TB\/s, 2\.3× slower per byte than its up stage/);
  fs.rmSync(out, { recursive: true, force: true });

  const { page, errors, requests } = await openApp({ width: 1440, height: 900 });
  // Chosen together, in one pick (the folder's files and the serving trace).
  await page.getByTestId('trace-input').setInputFiles([exec, ...captures]);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  // The pool found the capture by content; the page says it merged it.
  const note = page.getByTestId('capture-merge');
  assert.match(await note.textContent(), /serving trace with its graph captures, analyzed as one: 1 of 1 graph launches merged, 421 replayed kernels/);
  // The trace names no device: efficiency needs a platform (the capture goes along again).
  await page.getByTestId('platform-select').selectOption('MI300X');
  await page.getByTestId('platform').getByText('MI300X (given)').waitFor({ timeout: 60000 });
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  assert.equal(await page.getByTestId('capture-merge').getAttribute('data-kernels'), '421');
  const rec = await page.getByTestId('recommendation').first().textContent();
  assert.ok(rec.includes(first), `page's first recommendation ${rec.slice(0, 200)}…, CLI's ${first}`);
  await page.screenshot({ path: path.join(OUT, 'overview-inference-merged.png'), fullPage: false });
  await page.getByTestId('tab-categories').click();
  for (const key of ['gemm', 'sdpa_fwd', 'moe_fused']) {
    const text = await page.getByTestId(`category-${key}`).locator('summary').textContent();
    const eff = efficiency[key];
    assert.ok(eff > 0, `the CLI has no efficiency for ${key}`);
    assert.ok(text.includes(`${eff.toFixed(1)} % of roofline`), `${key}: ${text} (CLI ${eff.toFixed(1)} %)`);
  }
  await page.screenshot({ path: path.join(OUT, 'categories-inference-merged.png'), fullPage: false });
  // The exports carry the inference report's sheets.
  const bundle = (await exportFile(page, 'export-bundle')).bytes;
  for (const sheet of ['InferenceAttention_fwd', 'MoE_unfused_fwd', 'RMSNorm_fwd', 'GEMM']) {
    assert.ok(zipEntry(bundle, `perf_report_csvs/${sheet}.csv`), `${sheet}.csv missing from the bundle`);
  }
  const workbook = zipEntry((await exportFile(page, 'export-xlsx')).bytes, 'xl/workbook.xml');
  assert.match(workbook, /name="InferenceAttention_fwd"/);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  await page.close();
});

test('capture traces alone are named as such, not analyzed as ranks', async (t) => {
  const dir = path.join(CASE, 'capture_traces');
  if (!fs.existsSync(dir)) {
    t.skip('shared inference traces not present');
    return;
  }
  const capture = fs.readdirSync(dir).find((f) => f.endsWith('.json.gz'));
  const { page, errors } = await openApp();
  // The same capture twice (under two names): two files, both captures, no serving trace.
  const bytes = fs.readFileSync(path.join(dir, capture));
  await page.getByTestId('trace-input').setInputFiles([
    { name: 'a.json.gz', mimeType: 'application/gzip', buffer: bytes },
    { name: 'b.json.gz', mimeType: 'application/gzip', buffer: bytes },
  ]);
  await page.getByText('2 graph-capture traces without the serving trace').waitFor({ timeout: 60000 });
  assert.deepEqual(errors, []);
  await page.close();
});

/** A vLLM serving trace: each iteration one GEMM, prefills of a few long requests among decodes of
 * 32; `gpu` is each iteration's kernel time in µs (iterations are 80 µs apart on the host). */
function servingTrace(plan) {
  const ev = [];
  let t = 0;
  plan.forEach(([kind, n, gpu], i) => {
    const corr = i + 1;
    const name = kind === 'prefill'
      ? `execute_${n * 512}_context_${n}(sq${n * 512}sk${n * 512}sqsq${n * 512 * 512}sqsk${n * 512 * 512})_generation_0(sq0sk0sqsq0sqsk0)`
      : `execute_${n}_context_0(sq0sk0sqsq0sqsk0)_generation_${n}(sq${n}sk${n * 100}sqsq${n}sqsk${n * 100})`;
    const host = (cat, nm, ts, dur, args) => ev.push({ ph: 'X', cat, name: nm, pid: 1, tid: 1, ts, dur, args });
    host('user_annotation', name, t, gpu + 60, {});
    host('cpu_op', 'aten::mm', t + 5, 20, { 'Input Dims': [[n, 4096], [4096, 4096]], 'Input type': ['c10::BFloat16', 'c10::BFloat16'] });
    host('cuda_runtime', 'cudaLaunchKernel', t + 10, 5, { correlation: corr });
    ev.push({ ph: 'X', cat: 'kernel', name: 'sm90_xmma_gemm_bf16bf16_bf16f32', pid: 0, tid: 7, ts: t + 30, dur: gpu, args: { correlation: corr, stream: 7, device: 0 } });
    t += gpu + 80;
  });
  return Buffer.from(JSON.stringify({ deviceProperties: [{ id: 0, name: 'NVIDIA H100 80GB HBM3' }], traceEvents: ev }));
}

test('the Steps view judges prefill and decode iterations each against their own class', async () => {
  // Decode GPU spans: 180, 185, 178, 220 (the 140 µs kernel: 22 % over the decode median), 181, 179 µs.
  const plan = [['prefill', 2, 600], ['decode', 32, 100], ['decode', 32, 105], ['decode', 32, 98],
    ['prefill', 1, 400], ['decode', 32, 140], ['decode', 32, 101], ['decode', 30, 99]];
  const { page, errors } = await openApp({ width: 1300, height: 800 });
  await page.getByTestId('trace-input').setInputFiles({ name: 'serving.json', mimeType: 'application/json', buffer: servingTrace(plan) });
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  await page.getByTestId('tab-steps').click();
  const cells = async (key) => (await page.getByTestId(`steps-class-${key}`).locator('td').allTextContents()).map((c) => c.trim());
  // class, steps, steady, % of time, mean, median, CV, idle, host wait, requests.
  assert.deepEqual((await cells('prefill')).slice(0, 2), ['prefill', '2']);
  assert.deepEqual((await cells('decode')).slice(0, 2), ['decode', '6']);
  assert.equal((await cells('decode'))[5], '0.180');
  assert.equal((await cells('decode'))[9], '31.7');
  // Only the slow decode is an outlier: the prefills, 2.7× the decode median, are not.
  const flags = await page.getByTestId('step-row').evaluateAll((rows) => rows.map((r) => r.classList.contains('outlier')));
  assert.deepEqual(flags, [false, false, false, false, false, true, false, false]);
  await page.screenshot({ path: path.join(OUT, 'steps-prefill-decode.png'), fullPage: false });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a diffusion server whose only iteration annotation is execute_diffusion_* is merged with its FULL capture (issue #52)', async () => {
  // Generated with known truth: every graph launch is merged and every replayed kernel gets its
  // captured op (`jarvis synth --serving diffusion`; tests/capture_merge.rs checks the ops).
  const dir = fs.mkdtempSync(path.join(OUT, 'diffusion-'));
  execFileSync(JARVIS, ['synth', '--serving', 'diffusion', '--steps', '4', '--out', dir]);
  const cli = execFileSync(JARVIS, ['report', path.join(dir, 'serving.json'), '--capture', path.join(dir, 'capture_traces'), '--no-files'], { encoding: 'utf8' });
  const merged = cli.match(/(\d+) of (\d+) graph launches merged/);
  assert.ok(merged && merged[1] === merged[2] && merged[1] === '4', `CLI: ${merged}`);
  const kernels = cli.match(/merged with [^:]*: (\d+) replayed kernels/)[1];
  const captures = fs.readdirSync(path.join(dir, 'capture_traces')).map((f) => path.join(dir, 'capture_traces', f));
  const { page, errors, requests } = await openApp({ width: 1280, height: 800 });
  await page.getByTestId('trace-input').setInputFiles([path.join(dir, 'serving.json'), ...captures]);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 60000 });
  const note = page.getByTestId('capture-merge');
  assert.match(await note.textContent(), /analyzed as one: 4 of 4 graph launches merged/);
  assert.equal(await note.getAttribute('data-kernels'), kernels);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  fs.rmSync(dir, { recursive: true, force: true });
});
