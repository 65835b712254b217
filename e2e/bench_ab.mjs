// In-browser benchmark (not a test): the same trace loaded N times into each of several builds
// of the page (dist folders), interleaved (build A, build B, A, B, …) so a noisy machine's drift
// falls on all of them alike; medians per build. Each load is "warmed + 1.5 s" (the worker's
// warm-up complete, as in e2e/bench.mjs).
// Usage: [THREADS=N] [NATIVE=1] node e2e/bench_ab.mjs FILE RUNS DIST [DIST …]
// Prints per build the medians (ms) of reading + parsing, the worker's whole answer, file
// chosen → overview painted and → every view ready, then each run's overview time. NATIVE=1
// also runs `jarvis report FILE --no-files [--threads N]` once per round (wall clock, process
// start included) and gives each build's overview over the native median.
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { JARVIS, serveDir, launchChromium, warmedPage, loadTimes } from './harness.mjs';

const [file, runs, ...dists] = process.argv.slice(2);
if (!file || !Number(runs) || dists.length === 0) {
  console.error('usage: node e2e/bench_ab.mjs FILE RUNS DIST [DIST …]');
  process.exit(2);
}
// One static server per build, on its own port.
const served = [];
for (const d of dists) served.push(await serveDir(path.resolve(d)));
const browser = await launchChromium();
const query = process.env.THREADS ? `?threads=${process.env.THREADS}` : '';
const results = dists.map(() => ({ parse: [], answer: [], overview: [], complete: [] }));
const natives = [];
for (let i = 0; i < Number(runs); i += 1) {
  if (process.env.NATIVE) {
    const t0 = performance.now();
    execFileSync(JARVIS, ['report', file, '--no-files', ...(process.env.THREADS ? ['--threads', process.env.THREADS] : [])],
      { stdio: 'ignore' });
    natives.push(performance.now() - t0);
  }
  for (let k = 0; k < dists.length; k += 1) {
    const page = await warmedPage(browser, served[k].base + '/' + query);
    await page.getByTestId('trace-input').setInputFiles(file);
    await page.locator('body[data-complete-ms]').waitFor({ timeout: 600000 });
    const t = await loadTimes(page);
    for (const key of ['parse', 'answer', 'overview', 'complete']) results[k][key].push(t[key]);
    await page.close();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${path.basename(file)}, ${runs} interleaved loads per build, threads: ${process.env.THREADS ?? 'page default'}`);
const native = natives.length ? median(natives) : NaN;
if (natives.length) console.log(`native: ${native.toFixed(0)} ms (per run: ${natives.map((x) => x.toFixed(0)).join(' ')})`);
for (let k = 0; k < dists.length; k += 1) {
  const r = results[k];
  const ratio = natives.length ? ` = ${(median(r.overview) / native).toFixed(2)}× native` : '';
  console.log(`${dists[k]}: reading + parsing ${median(r.parse).toFixed(0)} · worker's answer ${median(r.answer).toFixed(0)}`
    + ` · overview ${median(r.overview).toFixed(0)}${ratio} · every view ${median(r.complete).toFixed(0)} ms`
    + ` (overview per run: ${r.overview.map((x) => x.toFixed(0)).join(' ')})`);
}
await browser.close();
for (const s of served) s.server.close();
