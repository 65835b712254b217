// Benchmark (not a test) of the What-if panel in Debian's headless Chromium: a trace (default
// OWLv2 H100, one 1.2 s step) is loaded, then the panel's first change (the top op at half its
// GPU time) is predicted ROUNDS times; prints the worker's replay time (`elapsed_ms` of each
// `whatif` reply) and the page's time from the click to the painted answer, medians.
// Usage (after `bash scripts/build-web`): node e2e/bench_whatif.mjs [TRACE] [ROUNDS]
import path from 'node:path';
import { SHARED, startApp, stopApp, openApp } from './harness.mjs';

const TRACE = process.argv[2]
  || path.join(SHARED, 'traces', 'tracelens', 'h100_google_owlv2-large-patch14-ensemble__1016001.json.gz');
const ROUNDS = Number(process.argv[3] || 7);
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

await startApp();
try {
  const { page } = await openApp({ width: 1280, height: 900 });
  await page.getByTestId('trace-input').setInputFiles(TRACE);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 300000 });
  await page.getByTestId('tab-critical').click();
  await page.getByTestId('whatif-predict').waitFor();
  const worker = [];
  const page_ms = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    const t0 = Date.now();
    await page.getByTestId('whatif-predict').click();
    await page.getByTestId('whatif-summary').waitFor({ timeout: 60000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    page_ms.push(Date.now() - t0);
    const text = await page.getByTestId('whatif-summary').textContent();
    worker.push(Number(text.match(/Replayed in (\d+) ms/)[1]));
  }
  console.log(`${path.basename(TRACE)}: what-if replay in the worker median ${median(worker)} ms (${worker.join(', ')}); click to painted answer median ${median(page_ms)} ms (${page_ms.join(', ')}), ${ROUNDS} rounds`);
} finally {
  await stopApp();
}
