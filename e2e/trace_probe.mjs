// Probe (not a test): a Chrome trace of one page loading the same trace file twice, warmed as in
// e2e/bench_ab.mjs, and the page's main-thread tasks of each load. The first load of a page pays
// what the second does not (code compiled on first use, first layout); comparing the two shows
// what. Open the trace file in Perfetto or chrome://tracing for the full picture, with V8's
// samples (a build keeping function names makes them readable: docs/performance.md).
// Usage: [WASM=1] node e2e/trace_probe.mjs FILE DIST OUT.json
import fs from 'node:fs';
import path from 'node:path';
import { serveDir, launchChromium, warmedPage, loadTimes } from './harness.mjs';

const [file, dist, out] = process.argv.slice(2);
if (!file || !dist || !out) {
  console.error('usage: node e2e/trace_probe.mjs FILE DIST OUT.json');
  process.exit(2);
}
const served = await serveDir(path.resolve(dist));
const browser = await launchChromium();
const page = await warmedPage(browser, served.base + '/');
await browser.startTracing(page, {
  path: out,
  categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute',
    'blink.user_timing', 'disabled-by-default-v8.cpu_profiler', 'toplevel', 'blink', 'loading',
    // WASM=1: V8's WebAssembly compiles too (`wasm.CompileLazy` per function on first call,
    // `wasm.TopTierCompilation` when one is optimized in the background).
    ...(process.env.WASM ? ['v8.wasm', 'disabled-by-default-v8.wasm.detailed'] : [])],
});
for (let i = 0; i < 2; i += 1) {
  await page.evaluate((n) => performance.mark(`load${n}`), i);
  await page.getByTestId('trace-input').setInputFiles(file);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 600000 });
  const t = await loadTimes(page);
  console.log(`load ${i}: reading + parsing ${t.parse} · worker's answer ${t.answer} · overview ${t.overview}`
    + ` · every view ${t.complete} ms`);
  await page.waitForTimeout(800);
}
await browser.stopTracing();
await browser.close();
served.server.close();

// The main thread's tasks over 5 ms in each load: when (ms after the load's mark), how long, and
// what they did (script, style, layout, paint).
const events = JSON.parse(fs.readFileSync(out, 'utf8')).traceEvents;
const marks = events.filter((e) => /^load\d$/.test(e.name) && e.cat.includes('user_timing'))
  .sort((a, b) => a.ts - b.ts);
const { pid, tid } = marks[0];
const mine = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === 'X');
const parts = ['FunctionCall', 'UpdateLayoutTree', 'Layout', 'PrePaint', 'Paint', 'MinorGC', 'MajorGC'];
marks.forEach((m, i) => {
  const end = marks[i + 1]?.ts ?? Infinity;
  console.log(`load ${i}: main-thread tasks over 5 ms`);
  for (const t of mine.filter((e) => e.name === 'RunTask' && e.ts >= m.ts && e.ts < end && e.dur > 5000)) {
    const inner = parts.map((p) => [p, mine.filter((e) => e.name === p && e.ts >= t.ts && e.ts < t.ts + t.dur)
      .reduce((s, e) => s + e.dur, 0)]).filter(([, d]) => d > 0);
    console.log(`  at ${((t.ts - m.ts) / 1000).toFixed(0)} ms: ${(t.dur / 1000).toFixed(1)} ms (`
      + `${inner.map(([p, d]) => `${p} ${(d / 1000).toFixed(1)}`).join(', ')})`);
  }
});
