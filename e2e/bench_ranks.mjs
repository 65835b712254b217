// In-browser benchmark of a multi-rank job (not a test): wall time from picking the rank files
// to the Ranks table, and the peak resident memory of all Chromium processes (page + pool
// workers), sampled every 100 ms with `ps`.
// Usage (after scripts/build-web): node e2e/bench_ranks.mjs DIR   (DIR from `jarvis synth --ranks N`)
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startApp, stopApp, baseUrl, browserInstance } from './harness.mjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node e2e/bench_ranks.mjs DIR');
  process.exit(2);
}
const files = fs.readdirSync(dir).filter((f) => /\.json(\.gz)?$/.test(f)).map((f) => path.join(dir, f));
const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);

// Resident memory of every Chromium process, MB.
const chromiumRss = () => {
  const out = execFileSync('ps', ['-eo', 'rss=,comm='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => /chrom/.test(l)).reduce((n, l) => n + Number(l.trim().split(/\s+/)[0]), 0) / 1024;
};

await startApp();
const page = await browserInstance().newPage();
await page.goto(baseUrl() + '/');
await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
const idle = chromiumRss();
let peak = idle;
const sampler = setInterval(() => { peak = Math.max(peak, chromiumRss()); }, 100);
const t0 = Date.now();
await page.getByTestId('trace-input').setInputFiles(files);
await page.getByTestId('ranks-table').waitFor({ timeout: 3600000 });
const wall = (Date.now() - t0) / 1000;
clearInterval(sampler);
const rows = await page.getByTestId('rank-row').count();
const cores = await page.evaluate(() => navigator.hardwareConcurrency);
console.log(`| ${files.length} ranks, ${(bytes / 1e6).toFixed(0)} MB | ${Math.max(2, Math.min(cores, files.length))} workers | ${wall.toFixed(1)} s | ${(bytes / 1e6 / wall).toFixed(0)} MB/s | peak Chromium RSS ${peak.toFixed(0)} MB (idle page ${idle.toFixed(0)} MB) | ${rows} rows |`);
await stopApp();
