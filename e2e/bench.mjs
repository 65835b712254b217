// In-browser benchmark (not a test): analysis time, MB/s of JSON and the worker's WebAssembly
// memory for the largest shared traces and for synthetic traces, in Debian's headless Chromium.
// Usage (after `trunk build --release`): [THREADS=N] node e2e/bench.mjs [FILE ...]
// THREADS: the page's import workers (`?threads=N`, 1: the worker alone) and the CLI's `--threads N`;
// unset: both use every core.
// Default inputs: the OWLv2 traces from ../shared and bench-out/synth_{1g,2g}.json if present.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { startApp, stopApp, baseUrl, browserInstance, JARVIS } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(here, '..');
const DIST = path.join(ROOT, 'dist');
const SHARED = process.env.JARVIS_SHARED || path.resolve(ROOT, '..', 'shared');

const defaults = [
  path.join(SHARED, 'traces/tracelens/mi300xvf_google_owlv2-large-patch14-ensemble__1016001.json.gz'),
  path.join(ROOT, 'bench-out/mi300xvf_google_owlv2-large-patch14-ensemble__1016001.json'),
  path.join(ROOT, 'bench-out/synth_1g.json'),
  path.join(ROOT, 'bench-out/synth_2g.json'),
];
const THREADS = process.env.THREADS;
const query = THREADS ? `?threads=${THREADS}` : '';
const nativeThreads = THREADS ? ['--threads', THREADS] : [];
const inputs = (process.argv.length > 2 ? process.argv.slice(2) : defaults).filter((f) => fs.existsSync(f));

await startApp();
const base = baseUrl();
const browser = browserInstance();
// Start-up: first contentful paint and time until the worker reports ready, from a cold
// browser context (empty cache) on localhost; median of 5 loads.
const loads = [];
for (let i = 0; i < 5; i += 1) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base + '/');
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
  const ready = await page.evaluate(() => performance.now());
  const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN);
  loads.push({ fcp, ready });
  await context.close();
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const gz = (re) => fs.readdirSync(DIST).filter((f) => re.test(f))
  .reduce((n, f) => n + zlib.gzipSync(fs.readFileSync(path.join(DIST, f)), { level: 9 }).length, 0);
console.log(`first contentful paint ${median(loads.map((l) => l.fcp)).toFixed(0)} ms, worker ready ${median(loads.map((l) => l.ready)).toFixed(0)} ms (median of 5 cold loads)`);
console.log(`gzipped: page bundle (html, js, css, app wasm) ${(gz(/^(index\.html|app-.*\.(js|wasm)|.*\.css)$/) / 1e3).toFixed(0)} kB, worker ${(gz(/^worker.*\.(js|wasm)$/) / 1e3).toFixed(0)} kB`);
console.log('');
// Each input twice: handed over as soon as the page says Ready (the worker cold, one warm-up
// step possibly running), and at a person's pace: 2 s after the worker's warm-up is complete
// (crates/worker/src/warmup.rs), by which time V8 has optimized the hot code in the background.
console.log(`threads: ${THREADS ?? 'every core'} (page: ?threads, native: --threads)`);
console.log('| input | JSON MB | handed over | in-browser s | of it reading + parsing s | MB/s | worker WASM memory MB | file chosen → overview painted s | → every view ready s | native `jarvis report --no-files` s (median of 5) | overview / native |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const file of inputs) {
  for (const when of ['at Ready', 'warmed + 2 s']) {
    const page = await browser.newPage();
    await page.goto(base + '/' + query);
    await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
    if (when !== 'at Ready') {
      await page.locator('body[data-worker-warm-ms]').waitFor({ timeout: 60000 });
      await page.waitForTimeout(2000);
    }
    await page.getByTestId('trace-input').setInputFiles(file);
    const cost = page.getByTestId('analysis-cost');
    await cost.waitFor({ timeout: 600000 });
    const ms = Number(await cost.getAttribute('data-elapsed-ms'));
    const parse = Number(await cost.getAttribute('data-parse-ms'));
    const jsonMb = Number(await cost.getAttribute('data-json-bytes')) / 1e6;
    const mem = Number(await cost.getAttribute('data-wasm-memory')) / 1e6;
    // With import workers: how many, and the main worker's own part of the reading.
    const workers = Number(await cost.getAttribute('data-import-workers'));
    const own = workers
      ? ` (${workers} import workers; main worker: cutting ${(Number(await cost.getAttribute('data-import-split-ms')) / 1000).toFixed(2)}, merging ${(Number(await cost.getAttribute('data-import-merge-ms')) / 1000).toFixed(2)}, reading ${await cost.getAttribute('data-import-own-ranges')} ranges ${(Number(await cost.getAttribute('data-import-own-ms')) / 1000).toFixed(2)})`
      : '';
    // What a person waits for (src/timing.rs): from handing the file to the worker to the overview
    // painted, and to the rest of the result painted.
    await page.locator('body[data-complete-ms]').waitFor({ timeout: 600000 });
    const [first, complete] = await page.evaluate(() => [document.body.dataset.firstAnswerMs, document.body.dataset.completeMs].map(Number));
    await page.close();
    // The native CLI on the same file, in the same run (wall clock, process start included):
    // the median of 5 runs, since one run on a busy 2-core machine varies by ±15 %.
    const natives = [];
    for (let i = 0; i < 5; i += 1) {
      const t0 = performance.now();
      execFileSync(JARVIS, ['report', file, '--no-files', ...nativeThreads], { stdio: 'ignore' });
      natives.push((performance.now() - t0) / 1000);
    }
    const native = median(natives);
    console.log(`| ${path.basename(file)} | ${jsonMb.toFixed(1)} | ${when} | ${(ms / 1000).toFixed(2)} | ${(parse / 1000).toFixed(2)}${own} | ${(jsonMb / (ms / 1000)).toFixed(0)} | ${mem.toFixed(0)} | ${(first / 1000).toFixed(2)} | ${(complete / 1000).toFixed(2)} | ${native.toFixed(2)} | ${(first / 1000 / native).toFixed(2)}× |`);
  }
}
await stopApp();
